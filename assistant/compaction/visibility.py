"""What the model must still see, and how a cleared or cut tool output says what is gone: no
output is cleared before the model has answered it (docs/COMPACTION.md)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from assistant.compaction.cut_point import is_turn_start
from assistant.compaction.file_tracking import READ_TOOLS, call_target
from assistant.compaction.tokens import largest_fitting
from assistant.conversation import PRUNED_PLACEHOLDER, Message, ToolCall

Count = Callable[[str], int]

#: Smallest size (tokens of the message segment) an unanswered output is cut to while other
#: room can still be found; below it only the marker would be left.
TRIM_FLOOR = 96
#: Growth factor between the rungs of the cap ladder.
LADDER_STEP = 1.25
#: Share of the kept lines taken from the head of a cut output (the rest from its tail).
HEAD_SHARE = 2 / 3
#: Longest target (path, pattern, command) quoted in a note.
TARGET_CHARS = 80

_READ_HEADER = re.compile(
    r"^.+ \((?:lines (?P<a>[\d,]+)-(?P<b>[\d,]+) of [\d,]+|(?P<total>[\d,]+) lines)\)$"
)
_SHOWING = re.compile(r"\[Truncated: showing lines (?P<a>[\d,]+)-(?P<b>[\d,]+) of")


# -- what is answered -----------------------------------------------------------------------
def is_final_reply(msg: Message) -> bool:
    """An assistant reply that answers the user (text, no tool call, not stopped)."""
    return (
        msg.role == "assistant"
        and not msg.tool_calls
        and not msg.stopped
        and bool(msg.content.strip())
    )


def pending_start(messages: Sequence[Message]) -> int:
    """Index of the first message after the last final reply (0 when there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        if is_final_reply(messages[i]):
            return i + 1
    return 0


def unanswered_ids(messages: Sequence[Message]) -> frozenset[str]:
    """Ids of the tool outputs the model has not answered yet (docs/COMPACTION.md)."""
    start = pending_start(messages)
    return frozenset(m.id for m in messages[start:] if m.role == "tool")


def pending_user_ids(messages: Sequence[Message]) -> frozenset[str]:
    """Ids of the user messages the model has not answered yet: cut like unanswered tool
    outputs when one alone is too long for the window (a pasted log of tens of MB)."""
    start = pending_start(messages)
    return frozenset(m.id for m in messages[start:] if m.role == "user")


def current_turn_start(messages: Sequence[Message]) -> int:
    """Index where the latest turn of the pending part starts: the first user action after
    the user message before the latest one (the pending part holds several turns when a
    question got no final reply); ``pending_start`` when there is no such message."""
    start = pending_start(messages)
    users = [i for i in range(start, len(messages)) if messages[i].role == "user"]
    if len(users) < 2:
        return start
    previous, latest = users[-2], users[-1]
    for j in range(previous + 1, latest + 1):
        if is_turn_start(messages[j]):
            return j
    return latest


def calls_by_id(messages: Sequence[Message]) -> dict[str, ToolCall]:
    return {call.id: call for m in messages for call in m.tool_calls}


# -- describing an output ---------------------------------------------------------------------
def _target(call: ToolCall | None) -> str:
    target = call_target(call) if call is not None else None
    if target is None:
        return ""
    text = " ".join(target.text.split())
    if len(text) > TARGET_CHARS:
        text = text[: TARGET_CHARS - 3] + "..."
    return text if target.is_path else repr(text)


def _int(value: str | None) -> int | None:
    return int(value.replace(",", "")) if value else None


def _arg_int(call: ToolCall | None, *keys: str) -> int | None:
    if call is None:
        return None
    for key in keys:
        value = call.arguments.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def first_file_line(content: str, call: ToolCall | None) -> int | None:
    """The file line number of the output's first body line, for read tools (else None):
    from our ``read_file``'s header, else other agents' read tools start at their offset."""
    name = call.name if call is not None else ""
    if name not in READ_TOOLS:
        return None
    head = content.split("\n", 1)[0]
    match = _READ_HEADER.match(head)
    if match:
        return _int(match.group("a")) or 1
    return _arg_int(call, "start_line", "offset", "line", "from") or 1


def line_range(content: str, call: ToolCall | None) -> tuple[int, int] | None:
    """The file lines a read tool's output holds, as (first, last)."""
    first = first_file_line(content, call)
    if first is None:
        return None
    head = content.split("\n", 1)[0]
    shown = _SHOWING.search(content)
    if shown:
        return _int(shown.group("a")) or first, _int(shown.group("b")) or first
    match = _READ_HEADER.match(head)
    if match and match.group("total"):
        return 1, _int(match.group("total")) or 1
    if match:
        return _int(match.group("a")) or 1, _int(match.group("b")) or 1
    lines = content.count("\n") + 1
    return first, first + lines - 1


def cleared_note(msg: Message, call: ToolCall | None, tokens: int) -> str:
    """What a pruned output shows: the placeholder, then what it was and how to get it."""
    name = msg.name or (call.name if call is not None else "tool")
    parts = [name]
    target = _target(call)
    if target:
        parts.append(target)
    rng = line_range(msg.content, call)
    if rng is not None:
        parts.append(f"lines {rng[0]:,}-{rng[1]:,}")
    what = " ".join(parts)
    if rng is None:
        what += f", {msg.content.count(chr(10)) + 1:,} lines of output"
    again = "read it again" if rng is not None else "run it again"
    return f"{PRUNED_PLACEHOLDER[:-1]}: {what}, {tokens:,} tokens; {again} if you need it]"


# -- cutting an output to fit --------------------------------------------------------------
def _marker(
    omitted_from: int, omitted_to: int, tokens: int, call: ToolCall | None, first: int | None,
    kind: str = "output",
) -> str:
    count = omitted_to - omitted_from + 1
    if first is not None:
        a = first + omitted_from - 1
        b = first + omitted_to - 1
        target = _target(call)
        where = f" path={target}" if target else ""
        return (
            f"[... {count:,} lines omitted here to fit the context window (file lines "
            f"{a:,}-{b:,}, {tokens:,} tokens); call read_file{where} start_line={a} "
            f"end_line={b} to see them ...]"
        )
    return (
        f"[... {count:,} lines omitted here to fit the context window ({kind} lines "
        f"{omitted_from + 1:,}-{omitted_to + 1:,}, {tokens:,} tokens){_KEPT.get(kind, '')} ...]"
    )


#: What a cut marker adds for a kind of content.
_KEPT = {"message": "; the whole message is kept in the chat: ask the user for the part needed"}


def trim_output(
    text: str, cap: int, count: Count, call: ToolCall | None = None, kind: str = "output"
) -> str:
    """``text`` cut to at most ``cap`` tokens: head and tail lines (or characters, for a few
    long lines) around a marker naming what is left out; whole when the cut frees nothing."""
    size = count(text)
    if size <= cap:
        return text
    lines = text.split("\n")
    first = first_file_line(text, call)
    if len(lines) >= 4:
        def build(keep: int) -> str:
            head = max(1, math.ceil(keep * HEAD_SHARE)) if keep else 0
            tail = max(keep - head, 1 if keep >= 2 else 0)
            head = keep - tail
            omitted = lines[head : len(lines) - tail]
            marker = _marker(
                head, len(lines) - tail - 1, count("\n".join(omitted)), call, first, kind
            )
            return "\n".join([*lines[:head], marker, *lines[len(lines) - tail :]])

        most = len(lines) - 1
    else:  # a few long lines: characters
        def build(keep: int) -> str:
            head = math.ceil(keep * HEAD_SHARE)
            tail = keep - head
            omitted = text[head : len(text) - tail]
            marker = (f"[... {len(omitted):,} characters omitted here to fit the context "
                      f"window ({count(omitted):,} tokens){_KEPT.get(kind, '')} ...]")
            return text[:head] + marker + text[len(text) - tail :]

        most = len(text) - 1
    cut = build(largest_fitting(build, most, cap, count))
    return cut if count(cut) < size else text


def cap_ladder(largest: int, floor: int = TRIM_FLOOR) -> list[int]:
    """Caps tried from the largest down: ``floor * 1.25**k`` below ``largest``, ending at
    ``floor`` (a smaller cap would leave little but the marker)."""
    rungs: list[int] = []
    value = float(floor)
    while value < largest:
        rungs.append(int(value))
        value *= LADDER_STEP
    rungs.reverse()
    return rungs


@dataclass(frozen=True)
class TrimPlan:
    """Caps (tokens of content) for the unanswered outputs that must be cut."""

    caps: Mapping[str, int]
    cap: int = 0

    @property
    def applies(self) -> bool:
        return bool(self.caps)


def plan_trims(
    outputs: Sequence[tuple[Message, int, int]], excess: int, floor: int = TRIM_FLOOR
) -> TrimPlan:
    """Caps freeing ``excess`` tokens from ``outputs`` ((message, segment tokens, content
    tokens) each): the highest :func:`cap_ladder` rung that does, else the lowest."""
    outputs = [o for o in outputs if o[1] > floor]
    if excess <= 0 or not outputs:
        return TrimPlan(caps={})
    largest = max(seg for _, seg, _ in outputs)
    chosen: dict[str, int] = {}
    ladder = cap_ladder(largest, floor)
    for cap in ladder:
        freed = 0
        caps: dict[str, int] = {}
        for msg, seg, content in outputs:
            if seg > cap:
                freed += seg - cap
                caps[msg.id] = max(cap - (seg - content), 1)
        chosen = caps
        if freed >= excess:
            return TrimPlan(caps=chosen, cap=cap)
    return TrimPlan(caps=chosen, cap=ladder[-1]) if ladder else TrimPlan(caps={})
