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
app); the others are the alternatives measured against them (docs/ANSWERS.md). The prompt
at question time: ``oracle-form``/``oracle-bare`` (recall's excerpts as plain passages, as
oracle (i) shows its passage), ``wider`` (fewer excerpts, each 800 characters of its
message), ``focus-N`` (only the newest N tokens of history beside the excerpts, the latest
exchange always; ``focus-app`` is the app's ``compaction.recall_focus``) and combinations;
``oracle`` asks oracle (i) on the same questions. ``--all`` asks every question before the
point rather than ``--questions`` of them. ``--hits`` asks no model (it loads it for its
tokenizer only, a few seconds): for each question, whether recall's block (the app's path,
the controller's ``prepare``) holds an accepted answer, the misses printed with what came back.

    python -m bench.end_variants --workload W5 --variant shipped --variant notes
    python -m bench.end_variants --real-session \\
        tests/data/real-sessions/pi_refactor_session.jsonl --all --variant notes --variant focus-300
    python -m bench.end_variants --real-session \\
        tests/data/real-sessions/pi_refactor_session.jsonl --point 1 --show
    python -m bench.end_variants --real-session \\
        tests/data/real-sessions/pi_refactor_session.jsonl --all --hits
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

from assistant.compaction.context_render import (
    FOCUS_TOKENS,
    SHORT_ANSWER_CHARS,
    render_history,
)
from assistant.compaction.request import CallRequest
from assistant.config import Settings
from assistant.conversation import Conversation, Message
from assistant.sessions.recall_text import query_terms

from .answer_suite import capped
from .answers import (
    Transcript,
    ask,
    oracle_passage_messages,
    replay_points,
    session_transcript,
    workload_transcript,
)
from .questions import accepted
from .recording import recording_backend
from .strategies import answer_controller
from .workloads import generate

log = logging.getLogger("bench")

#: A variant: (controller setup, transform of the prepared messages).
Setup = Callable[[Any], None]
Transform = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
#: A variant that also reads the request (recall's block) and the controller: ``(messages,
#: prepared request, controller, conversation) -> messages``.
Shaper = Callable[[list[dict[str, Any]], Any, Any, Conversation], list[dict[str, Any]]]


def switch(controller: Any, **changes: bool) -> None:
    """Change some of ``controller``'s switches, keeping the others."""
    before = controller.switches
    controller.switches = lambda: before().model_copy(update=changes)


def _shipped(_ctl: Any) -> None:
    return None


def _notes(ctl: Any) -> None:
    """Earlier turns written by :mod:`assistant.compaction.context_render`."""
    switch(ctl, earlier_as_notes=True)


def _as_built(ctl: Any) -> None:
    switch(ctl, earlier_as_notes=False)


def _focus_app(ctl: Any) -> None:
    """The app's path with ``compaction.recall_focus`` on (``context_render.focus_history``)."""
    switch(ctl, earlier_as_notes=True)
    ctl.focus_tokens = lambda: FOCUS_TOKENS


def _after(ctl: Any) -> None:
    switch(ctl, earlier_as_notes=False)
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


# -- the prompt at question time (issue 25, docs/ANSWERS.md "What the prompt shows") -----------

#: Characters of a widened excerpt: the size of oracle (i)'s passage (bench.questions).
WIDE_CHARS = 800


def _question_of(conv: Conversation) -> str:
    return next(m.content for m in reversed(conv.messages) if m.role == "user")


def _passages(block: Any, conv: Conversation, *, sources: bool, wide: int = 0,
              keep: int = 0) -> list[str]:
    """Recall's excerpts as plain passages (a source line above each when ``sources``),
    widened to ``wide`` characters of their message when ``wide``, the ``keep`` naming most
    of the question's words when ``keep``."""
    excerpts = list(block.excerpts)
    if keep:
        terms = query_terms(_question_of(conv))
        ranked = sorted(range(len(excerpts)), key=lambda i: (
            -sum(t in excerpts[i].text.lower() for t in terms), -i))
        excerpts = [excerpts[i] for i in sorted(ranked[:keep])]
    by_id = {m.id: m for m in conv.messages}
    out = []
    for e in excerpts:
        text = e.text.strip()
        msg = by_id.get(e.message_id)
        if wide and msg is not None and len(msg.content) > len(text):
            first = text.split("\n", 1)[0]
            at = msg.content.find(first)
            if at >= 0:
                start = max(0, min(at - max(wide - len(text), 0) // 2, len(msg.content) - wide))
                text = msg.content[start : start + max(wide, len(text))].strip()
        out.append(f"({e.label})\n{text}" if sources else text)
    return out


def _oracle_form(*, sources: bool = True, wide: int = 0, keep: int = 0) -> Shaper:
    """The latest user message as oracle (i) shows its passage: recall's excerpts as plain
    passages, a blank line, the question (no heading, no "- (turn 3, I said)" bullets)."""

    def shape(msgs: list[dict[str, Any]], req: Any, _ctl: Any,
              conv: Conversation) -> list[dict[str, Any]]:
        if req.recall is None:
            return msgs
        i = _latest_user(msgs)
        parts = _passages(req.recall, conv, sources=sources, wide=wide, keep=keep)
        msgs[i] = {**msgs[i], "content": "\n\n".join([*parts, _question_of(conv)])}
        return msgs

    return shape


def _focus(tokens: int, *, summary: bool = False, then: Shaper | None = None) -> Shaper:
    """When recall placed excerpts, only the newest ``tokens`` of the history before the
    latest user message (whole messages), always the latest exchange (the previous user
    message and the reply that closed its turn); the summary only when ``summary``."""

    def shape(msgs: list[dict[str, Any]], req: Any, ctl: Any,
              conv: Conversation) -> list[dict[str, Any]]:
        if then is not None:
            msgs = then(msgs, req, ctl, conv)
        if req.recall is None:
            return msgs
        last = _latest_user(msgs)
        first = _first(msgs)
        history = list(range(first, last))
        users = [j for j in history if msgs[j]["role"] == "user"
                 and not str(msgs[j].get("content") or "").startswith("[Output of ")]
        keep: set[int] = set()
        if users:  # the latest exchange: its user message and the reply closing its turn
            keep.add(users[-1])
            replies = [j for j in history if j > users[-1] and msgs[j]["role"] == "assistant"]
            if replies:
                keep.add(replies[-1])
        used = sum(ctl.counter.text(str(msgs[j].get("content") or "")) + 4 for j in keep)
        for j in reversed(history):
            if j in keep:
                continue
            cost = ctl.counter.text(str(msgs[j].get("content") or "")) + 4
            if used + cost > tokens:
                break
            keep.add(j)
            used += cost
        head = msgs[:first] if summary else msgs[:1]
        body = [msgs[j] for j in history if j in keep]
        return [*head, *body, *msgs[last:]]

    return shape


def _plain(f: Transform) -> Shaper:
    return lambda msgs, _req, _ctl, _conv: f(msgs)


VARIANTS: dict[str, tuple[Setup, Shaper]] = {
    "shipped": (_shipped, _plain(_same)),
    "notes": (_notes, _plain(_same)),
    "after": (_after, _plain(_same)),
    "sandwich": (_as_built, _plain(_sandwich)),
    "hint": (_as_built, _plain(_hint)),
    "calls-only": (_as_built, _plain(_calls_only)),
    "answers-only": (_as_built, _plain(_answers_only)),
    "outputs-only": (_notes, _plain(_outputs_only)),
    "oracle-form": (_notes, _oracle_form()),
    "oracle-bare": (_notes, _oracle_form(sources=False)),
    "wider": (_notes, _oracle_form(wide=WIDE_CHARS, keep=2)),
    "wider-1": (_notes, _oracle_form(wide=WIDE_CHARS, keep=1)),
    "focus-app": (_focus_app, _plain(_same)),
    "focus-0": (_notes, _focus(0)),
    "focus-300": (_notes, _focus(300)),
    "focus-800": (_notes, _focus(800)),
    "focus-800-summary": (_notes, _focus(800, summary=True)),
    "focus-0+oracle-form": (_notes, _focus(0, then=_oracle_form())),
    "focus-300+oracle-form": (_notes, _focus(300, then=_oracle_form())),
    "focus-0+wider": (_notes, _focus(0, then=_oracle_form(wide=WIDE_CHARS, keep=2))),
    "focus-300+wider": (_notes, _focus(300, then=_oracle_form(wide=WIDE_CHARS, keep=2))),
}


def _transcript(args: argparse.Namespace) -> Transcript:
    limit = None if args.all else args.questions
    if args.real_session:
        t = session_transcript(Path(args.real_session), limit=limit)
    else:
        t = workload_transcript(generate(args.workload, 0), limit=limit)
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


def recall_hits(
    t: Transcript, conv: Conversation, upto: int, backend: Any
) -> tuple[int, int, list[str]]:
    """Retrieval alone: for each question asked at the point (source before ``upto``), whether
    the block recall puts into its prompt (a fresh controller's ``prepare``, as the app does)
    holds an accepted answer. (hits, asked, lines: one per question, marked ``P`` when the
    answer is also in the rest of the prompt the call shows, the misses with what came
    back)."""
    hits = excerpts = tokens = 0
    asked = [q for q in t.questions if q.source < upto]
    lines: list[str] = []
    for q in asked:
        c = conv.model_copy(deep=True)
        c.append(Message(role="user", content=q.question))
        ctl = answer_controller("record+recall", backend, Settings(mode=t.mode))
        _focus_app(ctl)
        req = ctl.prepare(CallRequest(c, t.system))
        block = req.recall
        if block is not None:
            excerpts += len(block.excerpts)
            tokens += block.tokens
        ok = block is not None and accepted(block.text, q.answers)
        hits += ok
        # "P": the answer is also elsewhere in the prompt the call shows (the newest turns)
        shown = accepted("\n".join(str(m.get("content") or "") for m in req.messages[:-1]),
                         q.answers)
        lines.append(f"  {q.id} {'HIT ' if ok else 'miss'} {'P' if shown else '-'} "
                     f"{q.question!r} -> {q.answers[0]!r}")
        if not ok:
            lines.append("      (nothing)" if block is None else "\n".join(
                f"      ({e.label}) {e.text[:160]!r}" for e in block.excerpts))
    lines.append(f"  blocks: {excerpts / max(len(asked), 1):.2f} excerpts and "
                 f"{tokens / max(len(asked), 1):.0f} tokens per question")
    return hits, len(asked), lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.end_variants")
    p.add_argument("--workload", default="W5")
    p.add_argument("--real-session")
    p.add_argument("--questions", type=int, default=12)
    p.add_argument("--all", action="store_true",
                   help="every question of the transcript (those before the point are asked)")
    p.add_argument("--window", type=int, default=2048)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--variant", action="append", choices=sorted([*VARIANTS, "oracle"]),
                   help="oracle: oracle (i), the source passage alone, on the same questions")
    p.add_argument("--cache", type=Path,
                   default=Path(tempfile.gettempdir()) / "bench-end-variants")
    p.add_argument("--point", default="end", help="ask point: 0, 1, 2 or end")
    p.add_argument("--show", action="store_true", help="print each prompt's last message")
    p.add_argument("--hits", action="store_true",
                   help="no answers: whether recall's block holds each accepted answer")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from assistant.llm.llama_backend import LlamaBackend

    t = _transcript(args)
    model = LlamaBackend.load("smollm2-135m-instruct", n_ctx=8192, threads=args.threads,
                              calibrate=not args.hits)
    backend = recording_backend(model, t.window_cap)
    started = time.perf_counter()
    conv, upto = point_conv(t, backend, args.cache, args.point)
    print(f"{t.name}: point {args.point} at message {upto}, {len(conv.compactions)} compactions "
          f"({time.perf_counter() - started:.0f} s)", flush=True)
    if args.hits:
        hits, n, lines = recall_hits(t, conv, upto, backend)
        print("\n".join(lines))
        print(f"{t.name} recall hits: {hits}/{n} ({time.perf_counter() - started:.0f} s)")
        return 0
    asked = [q for q in t.questions if q.source < upto]
    for name in args.variant or list(VARIANTS):
        got = 0
        for q in asked:
            if name == "oracle":
                msgs = oracle_passage_messages(t, q)
            else:
                setup, shape = VARIANTS[name]
                c = conv.model_copy(deep=True)
                c.append(Message(role="user", content=q.question))
                ctl = answer_controller("record+recall", backend, Settings(mode=t.mode))
                setup(ctl)
                req = ctl.prepare(CallRequest(c, t.system))
                msgs = shape([dict(m) for m in req.messages], req, ctl, c)
            reply, tokens = ask(backend, msgs)
            ok = accepted(reply, q.answers)
            got += ok
            placed = "R" if name != "oracle" and req.recall is not None else "-"
            print(f"  {name} {q.id} {'OK ' if ok else 'no '} {placed} {tokens:5d} "
                  f"{q.question[:60]!r} -> {reply[:90]!r}", flush=True)
            if args.show:
                print("    LAST: " + str(msgs[-1].get("content"))[:1500].replace("\n", "\n    "))
        print(f"{t.name} {name}: {got}/{len(asked)} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
