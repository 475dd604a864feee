"""How the history before the latest user message is written for the model (docs/COMPACTION.md)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from assistant import jsonlimits

#: An assistant reply up to this many characters on one line is a "short answer".
SHORT_ANSWER_CHARS = 80
#: A user question up to this many characters on one line is a "short question".
SHORT_QUESTION_CHARS = 200
#: How an earlier turn's tool result starts, written as a note.
OUTPUT_NOTE = "[Output of "
#: An argument longer than this is left out of a call's note (file contents, edits).
NOTE_ARGUMENT_CHARS = 200
#: Tokens of history :func:`focus_history` keeps beside recall's excerpts (measured best of
#: 0, 300 and 800 on the real session's end: docs/ANSWERS.md); the sticky window averages
#: about this (:func:`focus_bounds`).
FOCUS_TOKENS = 300


def latest_user_index(messages: Sequence[dict[str, Any]]) -> int | None:
    """Index of the latest user message (None: there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return i
    return None


def is_output(msg: dict[str, Any]) -> bool:
    """Whether ``msg`` (as rendered) holds a tool's output, as a result or as a note."""
    content = msg.get("content")
    return msg.get("role") == "tool" or (
        msg.get("role") == "user" and isinstance(content, str) and content.startswith(OUTPUT_NOTE)
    )


def call_note(name: str, arguments: str) -> str:
    """``read_file path=src/x.ts``: the tool and its short arguments, for a note."""
    try:
        args: Any = jsonlimits.loads(
            arguments or "{}", "arguments", jsonlimits.MAX_ARGUMENT_DEPTH,
            max_chars=jsonlimits.MAX_ARGUMENT_CHARS,
        )
    except ValueError:  # a hostile or broken call: its name is enough
        args = None
    if not isinstance(args, dict):
        return name
    shown = [f"{key}={value}" for key, value in args.items()
             if len(str(value)) <= NOTE_ARGUMENT_CHARS]
    return " ".join([name, *shown])


def _short_answer(msg: dict[str, Any]) -> bool:
    text = str(msg.get("content") or "").strip()
    return (
        msg.get("role") == "assistant" and not msg.get("tool_calls") and bool(text)
        and len(text) <= SHORT_ANSWER_CHARS and "\n" not in text
    )


def _question(msg: dict[str, Any]) -> bool:
    """A short question on one line (and nothing else: a pasted log is never left out)."""
    text = str(msg.get("content") or "").strip()
    return (
        msg.get("role") == "user" and text.endswith("?") and "\n" not in text
        and len(text) <= SHORT_QUESTION_CHARS
    )


def render_history(
    messages: Sequence[dict[str, Any]], *, first: int = 1, excerpts: bool = False,
    user_calls: Collection[str] = (), latest: int | None = None,
) -> list[dict[str, Any]]:
    """A copy of ``messages`` with the tool calls of ``messages[first:latest]`` (by default
    up to the latest user message) as notes and, with ``excerpts``, short question-answer
    exchanges left out; ``user_calls``: ids of the calls the user ran (``/read``)."""
    last = latest_user_index(messages) if latest is None else latest
    if last is None or last < first:
        return [dict(m) for m in messages]
    dropped: set[int] = set()
    if excerpts:
        for i in range(first + 1, last):
            if _short_answer(messages[i]) and _question(messages[i - 1]):
                dropped |= {i - 1, i}
    out: list[dict[str, Any]] = []
    notes: dict[str, str] = {}
    for i, msg in enumerate(messages):
        if i in dropped:
            continue
        if first <= i < last and msg.get("role") == "assistant" and msg.get("tool_calls"):
            lines = []
            for call in msg["tool_calls"]:
                fn = call.get("function") or {}
                note = call_note(str(fn.get("name") or "tool"), str(fn.get("arguments") or ""))
                notes[str(call.get("id"))] = note
                who = "At your request I ran" if call.get("id") in user_calls else "I ran"
                lines.append(f"[{who} {note}]")
            text = str(msg.get("content") or "").strip()
            out.append({"role": "assistant", "content": "\n".join([text, *lines]).strip()})
        elif first <= i < last and msg.get("role") == "tool":
            note = notes.get(str(msg.get("tool_call_id")), str(msg.get("name") or "tool"))
            output = str(msg.get("content") or "")
            out.append({"role": "user", "content": f"{OUTPUT_NOTE}{note}]\n{output}"})
        else:
            out.append(dict(msg))
    return out


def _latest_exchange(messages: Sequence[dict[str, Any]], first: int, last: int) -> set[int]:
    """Indexes of the latest exchange before ``last``: the previous user message and the
    last reply after it (what a follow-up leans on)."""
    asked = [i for i in range(first, last) if messages[i].get("role") == "user"
             and not is_output(messages[i])]
    if not asked:
        return set()
    replies = [i for i in range(asked[-1], last) if messages[i].get("role") == "assistant"]
    return {asked[-1], *replies[-1:]}


def focus_start(
    messages: Sequence[dict[str, Any]], *, first: int, tokens: int,
    count: Callable[[dict[str, Any]], int],
) -> int:
    """Where the newest whole messages before the latest user message that fit ``tokens``
    beside the latest exchange start (the latest user message when none fits)."""
    last = latest_user_index(messages)
    if last is None or last <= first:
        return first
    keep = _latest_exchange(messages, first, last)
    used = sum(count(messages[i]) for i in keep)
    start = last
    for i in reversed(range(first, last)):
        cost = 0 if i in keep else count(messages[i])
        if used + cost > tokens:
            break
        used += cost
        start = i
    return start


def focus_bounds(tokens: int) -> tuple[int, int]:
    """(restart, ceiling) of a sticky focus window averaging about ``tokens``: a window
    that outgrew four thirds of it restarts at two thirds (half the ceiling)."""
    return tokens * 2 // 3, tokens * 4 // 3


def sticky_focus_start(
    messages: Sequence[dict[str, Any]], *, first: int, tokens: int,
    count: Callable[[dict[str, Any]], int], anchor: int | None,
) -> int:
    """``anchor`` (the previous call's start, so prompts share their prefix) while its
    history fits :func:`focus_bounds`' ceiling, else :func:`focus_start` at the restart."""
    restart, ceiling = focus_bounds(tokens)
    last = latest_user_index(messages)
    if last is None or last <= first:
        return first
    if anchor is None or not first <= anchor <= last:
        return focus_start(messages, first=first, tokens=tokens, count=count)
    keep = _latest_exchange(messages, first, last) | set(range(anchor, last))
    if sum(count(messages[i]) for i in keep) <= ceiling:
        return anchor
    return focus_start(messages, first=first, tokens=restart, count=count)


def focus_history(
    messages: Sequence[dict[str, Any]], *, first: int, tokens: int,
    count: Callable[[dict[str, Any]], int], start: int | None = None,
) -> list[dict[str, Any]]:
    """A copy of ``messages`` with the history before the latest user message cut to the
    messages from ``start`` (default :func:`focus_start`) and the latest exchange; the
    system prompt stays, the summary (before ``first``) goes."""
    last = latest_user_index(messages)
    if last is None or last <= first:
        return [dict(m) for m in messages]
    if start is None:
        start = focus_start(messages, first=first, tokens=tokens, count=count)
    keep = _latest_exchange(messages, first, last) | set(range(max(start, first), last))
    head = [dict(messages[0])] if first > 0 else []
    return [*head, *(dict(messages[i]) for i in range(first, last) if i in keep),
            *(dict(m) for m in messages[last:])]
