"""The answer benchmark's questions at one ask point only, under prompt variants (a fast loop).

``python -m bench --answers-only`` replays a transcript and asks at four points with every
variant (10-15 minutes per transcript on the loaded machine). To compare ways of building
the prompt on the questions that fail, this replays once (``record+recall``, the window
capped as the app caps it), keeps the ask points' chats in a JSON file (``--cache DIR``, a
temporary folder by default; reused by the next run) and asks only one point's questions
(``--point``, the end by default): each through a fresh controller's ``prepare`` (the app's
prompt path), then through each variant, a function of the prepared messages (and of the
controller, for recall's placement). One variant costs 1-5 minutes on the loaded machine.
``shipped`` is the app's prompt path as it was before ``notes``; ``notes`` is it with
:mod:`assistant.compaction.context_render` (``compaction.earlier_as_notes``, now on in the
app); the others are the alternatives measured against them (docs/ANSWERS.md).

    python -m bench.end_variants --workload W5 --variant shipped --variant notes
    python -m bench.end_variants --real-session \\
        tests/data/real-sessions/pi_refactor_session.jsonl --point 1 --show
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assistant.compaction.context_render import SHORT_ANSWER_CHARS, render_history
from assistant.compaction.request import CallRequest
from assistant.config import Settings
from assistant.conversation import Conversation, Message

from .answer_suite import capped
from .answers import Transcript, ask, replay_points, session_transcript, workload_transcript
from .questions import accepted
from .recording import recording_backend
from .strategies import answer_controller
from .workloads import generate

log = logging.getLogger("bench")

#: A variant: (controller setup, transform of the prepared messages).
Setup = Callable[[Any], None]
Transform = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def _shipped(_ctl: Any) -> None:
    return None


def _notes(ctl: Any) -> None:
    """Earlier turns written by :mod:`assistant.compaction.context_render`."""
    ctl.render_earlier = lambda: True


def _as_built(ctl: Any) -> None:
    ctl.render_earlier = lambda: False


def _after(ctl: Any) -> None:
    ctl.render_earlier = lambda: False
    ctl.recall.placement = "after"


def _same(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return msgs


def _latest_user(msgs: list[dict[str, Any]]) -> int:
    return max(i for i, m in enumerate(msgs) if m["role"] == "user")


def _first(msgs: list[dict[str, Any]]) -> int:
    summary = len(msgs) > 1 and str(msgs[1].get("content")).startswith("[Context summary]")
    return 2 if summary else 1


def _sandwich(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The question, the excerpts, the question again."""
    i = _latest_user(msgs)
    text = str(msgs[i]["content"])
    question = text.rsplit("\n\n", 1)[-1]
    if question != text:
        msgs[i] = {**msgs[i], "content": f"{question}\n\n{text}"}
    return msgs


def _hint(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A line after the question pointing at the excerpts."""
    i = _latest_user(msgs)
    text = str(msgs[i]["content"])
    if text.startswith("Earlier in this chat"):
        msgs[i] = {**msgs[i], "content": text + "\n(Answer from the excerpts above.)"}
    return msgs


def _calls_only(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Earlier calls as notes, earlier answers kept."""
    return render_history(msgs, first=_first(msgs), excerpts=False)


def _answers_only(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Earlier question-and-one-line-answer exchanges left out, calls kept literal."""
    last = _latest_user(msgs)
    drop: set[int] = set()
    for i in range(_first(msgs) + 1, last):
        text = str(msgs[i].get("content") or "").strip()
        asked = str(msgs[i - 1].get("content") or "").rstrip().endswith("?")
        if (msgs[i]["role"] == "assistant" and not msgs[i].get("tool_calls") and asked
                and msgs[i - 1]["role"] == "user" and len(text) <= SHORT_ANSWER_CHARS
                and "\n" not in text):
            drop |= {i - 1, i}
    return [m for i, m in enumerate(msgs) if i not in drop]


def _outputs_only(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Earlier turns as notes, but an assistant message that holds only call notes
    ("[I ran ...]") left out: the "[Output of ...]" message that follows names the call."""
    last = _latest_user(msgs)

    def only_notes(m: dict[str, Any]) -> bool:
        lines = [ln for ln in str(m.get("content") or "").splitlines() if ln.strip()]
        return bool(lines) and all(
            ln.startswith(("[I ran ", "[At your request I ran ")) and ln.endswith("]")
            for ln in lines)

    return [m for i, m in enumerate(msgs)
            if not (i < last and m["role"] == "assistant" and not m.get("tool_calls")
                    and only_notes(m))]


VARIANTS: dict[str, tuple[Setup, Transform]] = {
    "shipped": (_shipped, _same),
    "notes": (_notes, _same),
    "after": (_after, _same),
    "sandwich": (_as_built, _sandwich),
    "hint": (_as_built, _hint),
    "calls-only": (_as_built, _calls_only),
    "answers-only": (_as_built, _answers_only),
    "outputs-only": (_notes, _outputs_only),
}


def _transcript(args: argparse.Namespace) -> Transcript:
    if args.real_session:
        t = session_transcript(Path(args.real_session), limit=args.questions)
    else:
        t = workload_transcript(generate(args.workload, 0), limit=args.questions)
    return capped(t, args.window)


def point_conv(
    t: Transcript, backend: Any, cache: Path, label: str = "end"
) -> tuple[Conversation, int]:
    """The chat at ask point ``label`` (replayed once, every point then read from ``cache``)."""
    path = cache / f"{t.name.replace(' ', '_').replace('@', '')}.points.json"
    if not path.exists():
        ctl = answer_controller("record+recall", backend, Settings(mode=t.mode))
        points, _made = replay_points(ctl, t)
        cache.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            p.label: {"conv": p.conv.model_dump(mode="json"), "upto": p.upto} for p in points
        }))
    data = json.loads(path.read_text())[label]
    return Conversation.model_validate(data["conv"]), int(data["upto"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.end_variants")
    p.add_argument("--workload", default="W5")
    p.add_argument("--real-session")
    p.add_argument("--questions", type=int, default=12)
    p.add_argument("--window", type=int, default=2048)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--variant", action="append", choices=sorted(VARIANTS))
    p.add_argument("--cache", type=Path,
                   default=Path(tempfile.gettempdir()) / "bench-end-variants")
    p.add_argument("--point", default="end", help="ask point: 0, 1, 2 or end")
    p.add_argument("--show", action="store_true", help="print each prompt's last message")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from assistant.llm.llama_backend import LlamaBackend

    t = _transcript(args)
    model = LlamaBackend.load("smollm2-135m-instruct", n_ctx=8192, threads=args.threads,
                              calibrate=True)
    backend = recording_backend(model, t.window_cap)
    started = time.perf_counter()
    conv, upto = point_conv(t, backend, args.cache, args.point)
    print(f"{t.name}: point {args.point} at message {upto}, {len(conv.compactions)} compactions "
          f"({time.perf_counter() - started:.0f} s)", flush=True)
    asked = [q for q in t.questions if q.source < upto]
    for name in args.variant or list(VARIANTS):
        setup, transform = VARIANTS[name]
        got = 0
        for q in asked:
            c = conv.model_copy(deep=True)
            c.append(Message(role="user", content=q.question))
            ctl = answer_controller("record+recall", backend, Settings(mode=t.mode))
            setup(ctl)
            req = ctl.prepare(CallRequest(c, t.system))
            msgs = transform([dict(m) for m in req.messages])
            reply, tokens = ask(backend, msgs)
            ok = accepted(reply, q.answers)
            got += ok
            print(f"  {name} {q.id} {'OK ' if ok else 'no '} {tokens:5d} "
                  f"{q.question[:60]!r} -> {reply[:90]!r}", flush=True)
            if args.show:
                print("    LAST: " + str(msgs[-1].get("content"))[:1500].replace("\n", "\n    "))
        print(f"{t.name} {name}: {got}/{len(asked)} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
