"""How recall's excerpts are best shown to a base model: a fast probe on the app's own prompts.

The answer benchmark (``python -m bench --answers-only``) replays a chat, compacts it and asks
each question through the controller's ``prepare``; a full run of the real session takes
many minutes, most of it the replay. This probe does the replay once and keeps the prompts:

* ``capture``: replays a workload or a real session as the answer benchmark does (one
  strategy, prompts within ``--window``), and saves every question's final prompt (the
  messages ``prepare`` built, recall's block in the latest user message), asked after at
  least one compaction, with its accepted answers, to a JSON file;
* ``probe``: loads the saved prompts and asks a model each of them rendered in one or more
  forms of the transcript template (:mod:`assistant.llm.transcript`), at temperature 0,
  scored as the answer benchmark scores replies (:func:`bench.questions.accepted`).

The forms (:data:`LAYOUTS`) are layouts of recall's block in the transcript form
(:mod:`assistant.llm.transcript_recall`): ``labeled``, the block as recall writes it (the
transcript form before the shipped layout); ``shipped``, what the app does now; and the
trial layouts measured beside it (docs/ANSWERS.md, "gemma-3-270m")::

    python -m bench.recall_form capture --workload W4 --out /tmp/w4.json
    python -m bench.recall_form capture --real-session \\
        tests/data/real-sessions/pi_refactor_session.jsonl --out /tmp/real.json
    python -m bench.recall_form probe /tmp/real.json /tmp/w4.json --threads 1

It prints, per form, accepted / asked and each reply.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from assistant.compaction.controller import CallRequest
from assistant.conversation import Message
from assistant.llm.base import GenerationOptions
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.transcript import TranscriptTemplate
from assistant.llm.transcript_recall import (
    Block,
    Layout,
    lay_out,
    plain_block,
    plain_line,
    said_examples,
)

from .answer_suite import capped
from .answers import (
    ANSWER_TOKENS,
    Transcript,
    _controller,
    app_window_cap,
    replay_points,
    session_transcript,
    workload_transcript,
)
from .questions import accepted
from .recording import recording_backend
from .workloads import generate

Messages = list[dict[str, Any]]


def _labeled(out: Messages, at: int, block: Block, shots: Messages) -> Messages:
    """As recall wrote it, in the latest message after the worked examples."""
    return out[:at] + shots + out[at:]


def _plain(out: Messages, at: int, block: Block, shots: Messages) -> Messages:
    """Plain lines of context without the parenthesised labels, then the question."""
    msg = {**out[at], "content": f"{plain_block(block)}\n\n{block.message}"}
    return out[:at] + shots + [msg] + out[at + 1:]


def _short(out: Messages, at: int, block: Block, shots: Messages) -> Messages:
    """:func:`_plain` without a file tool's name ("From notes.txt, line 17: ...")."""
    def line(e: Any) -> str:
        if e.source.startswith("read_file "):
            where = f", {e.lines}" if e.lines else ""
            return f"From {e.source.removeprefix('read_file ')}{where}: {e.text}"
        return plain_line(e)

    text = "\n".join(line(e) for e in block.excerpts)
    msg = {**out[at], "content": f"{text}\n\n{block.message}"}
    return out[:at] + shots + [msg] + out[at + 1:]


def _front(out: Messages, at: int, block: Block, shots: Messages) -> Messages:
    """The plain lines as a user message of their own before the worked examples."""
    ctx = {"role": "user", "content": plain_block(block)}
    return [*out[:at], ctx, *shots, {**out[at], "content": block.message}, *out[at + 1:]]


def _front_labeled(out: Messages, at: int, block: Block, shots: Messages) -> Messages:
    """The labeled block as a user message of its own before the worked examples."""
    raw = str(out[at]["content"])
    ctx = {"role": "user", "content": raw[: len(raw) - len(block.message)].rstrip()}
    return [*out[:at], ctx, *shots, {**out[at], "content": block.message}, *out[at + 1:]]


def _exchange(out: Messages, at: int, block: Block, shots: Messages) -> Messages:
    """The plain lines as an earlier exchange: asked for, and given by the assistant."""
    ask = {"role": "user", "content": "What was said earlier about this?"}
    said = {"role": "assistant", "content": plain_block(block)}
    return ([*out[:at], ask, said, *shots, {**out[at], "content": block.message}, *out[at + 1:]])


def _restate(out: Messages, at: int, block: Block, shots: Messages) -> Messages:
    """The question, the plain lines, the question again (the worked examples as they are)."""
    text = f"{block.message}\n\n{plain_block(block)}\n\n{block.message}"
    return out[:at] + shots + [{**out[at], "content": text}] + out[at + 1:]


def _plain_said(out: Messages, at: int, block: Block, shots: Messages) -> Messages:
    """:func:`_plain` with the worked examples' facts as excerpts ("Earlier I said: ...")."""
    return _plain(out, at, block, said_examples(shots))


#: The layouts the probe compares (see the module docstring).
LAYOUTS: dict[str, Layout] = {
    "labeled": _labeled,
    "plain": _plain,
    "plain-short": _short,
    "front": _front,
    "front-labeled": _front_labeled,
    "exchange": _exchange,
    "restate": _restate,
    "plain-shots": _plain_said,
    "shipped": lay_out,
}


def capture(t: Transcript, model: str, variant: str, threads: int) -> list[dict[str, Any]]:
    """Every question's final prompt after at least one compaction (see the module doc)."""
    from assistant.config import Settings

    from .answer_suite import ORACLE_CONTEXT, trained_window

    n_ctx = max(Settings(mode=t.mode).policy().window, ORACLE_CONTEXT)
    n_ctx = min(n_ctx, trained_window(model) or n_ctx)
    backend = LlamaBackend.load(model, n_ctx=n_ctx, threads=threads)
    try:
        cap = recording_backend(backend, app_window_cap(backend, t))
        ctl = _controller(cap, t, variant)  # type: ignore[arg-type]
        points, _made = replay_points(ctl, t)
        out: list[dict[str, Any]] = []
        for point in points:
            if point.compactions < 1:
                continue
            for q in [q for q in t.questions if q.source < point.upto]:
                conv = point.conv.model_copy(deep=True)
                conv.append(Message(role="user", content=q.question))
                asker = _controller(cap, t, variant)  # type: ignore[arg-type]
                req = asker.prepare(CallRequest(conv, t.system))
                out.append({"point": point.label, "question": q.question, "id": q.id,
                            "answers": list(q.answers), "messages": req.messages})
        return out
    finally:
        backend.close()


def probe(paths: list[Path], model: str, forms: list[str], threads: int, show: bool) -> None:
    prompts = [(p.stem, x) for p in paths for x in json.loads(p.read_text())]
    backend = LlamaBackend.load(model, n_ctx=2048, threads=threads)
    try:
        bos = backend.template.bos_token
        for form in forms:
            template = TranscriptTemplate(bos_token=bos, recall_layout=LAYOUTS[form])
            start = time.perf_counter()
            got: dict[str, list[int]] = {}
            lines = []
            for name, x in prompts:
                text = template.render(x["messages"])
                options = GenerationOptions(max_tokens=ANSWER_TOKENS, temperature=0.0,
                                            stop=template.stops)
                reply = ""
                for event in backend.generate_tokens(backend.tokenize(text), options):
                    if event.result is not None:
                        reply = event.result.text.strip()
                ok = accepted(reply, x["answers"])
                tally = got.setdefault(name, [0, 0])
                tally[0] += ok
                tally[1] += 1
                lines.append(f"  {'+' if ok else '-'} {name} {x['point']} {x['question']!r} -> "
                             f"{reply[:80]!r} (want {x['answers'][0]!r})")
                if show:
                    print(text[-1500:], "\n-----", flush=True)
            summary = ", ".join(f"{n} {a}/{b}" for n, (a, b) in got.items())
            print(f"form={form}: {summary} ({time.perf_counter() - start:.0f} s)", flush=True)
            print("\n".join(lines), flush=True)
    finally:
        backend.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.recall_form", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("--workload")
    c.add_argument("--real-session", type=Path)
    c.add_argument("--questions", type=int, default=12)
    c.add_argument("--window", type=int, default=2048)
    c.add_argument("--variant", default="record+recall+notes")
    c.add_argument("--model", default="gemma-3-270m")
    c.add_argument("--threads", type=int, default=1)
    c.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("probe")
    r.add_argument("paths", type=Path, nargs="+")
    r.add_argument("--model", default="gemma-3-270m")
    r.add_argument("--form", action="append", choices=list(LAYOUTS))
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--show", action="store_true", help="print each prompt's end")
    args = p.parse_args(argv)
    if args.cmd == "capture":
        if args.real_session is not None:
            t = session_transcript(args.real_session, limit=args.questions)
        else:
            t = workload_transcript(generate(args.workload or "W4", 0), limit=args.questions)
        got = capture(capped(t, args.window), args.model, args.variant, args.threads)
        args.out.write_text(json.dumps(got))
        print(f"{len(got)} prompts saved to {args.out}")
    else:
        probe(args.paths, args.model, args.form or list(LAYOUTS), args.threads, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
