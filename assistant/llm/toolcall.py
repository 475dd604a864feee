"""Finding tool calls in a model's reply text.

Small models write tool calls in many shapes; all of these are recognized:

* the text protocol's fenced block (``` ```tool_call ``` ```; also ``tool``, ``tool_code``,
  ``function_call``), whose content must be a call;
* ``<tool_call>...</tool_call>`` tags (Hermes/Qwen style) and ``<function=NAME>{...}</function>``;
* a fenced ``json`` block (or one with no language) and a bare JSON object in the text,
  taken as a call when they have the shape of one (``name`` plus ``arguments``);
* ``arguments`` as an object or as a JSON string holding one (``parameters`` is accepted
  for ``arguments``, and ``{"function": {...}}`` wrappers and lists of calls are unwrapped).

Call ids are generated here (a model's may repeat). A block meant as a call that cannot be
understood becomes a :class:`ParsedCall` with ``error`` set (the agent answers it with the
expected format), keeping what the model wrote in ``raw_arguments``. Nothing here raises; an
unclosed block at the end (the model ran out of tokens) is read to the end. The work is linear
in the reply and capped (the limits below); all JSON goes through :mod:`assistant.jsonlimits`.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Any

from assistant import jsonlimits
from assistant.conversation import ToolCall
from assistant.jsonlimits import MAX_ARGUMENT_CHARS, MAX_ARGUMENT_DEPTH, value_depth

#: Fence languages whose content must be a tool call.
CALL_FENCES = frozenset(
    {"tool_call", "tool-call", "toolcall", "tool", "tool_code", "function_call", "function"}
)
#: Fence languages whose content is a call only if it looks like one.
MAYBE_FENCES = frozenset({"json", "json5", ""})

INVALID_NAME = "invalid_tool_call"

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_\-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FUNCTION_TAG = re.compile(r"<function=([A-Za-z0-9_.\-]+)>(.*?)(?:</function>|\Z)", re.DOTALL)
_NAME_IN_TEXT = re.compile(r'"name"\s*:\s*"([A-Za-z0-9_.\-]{1,64})"')
#: A bare object worth decoding starts with a key: ``{"``.
_OBJECT_START = re.compile(r'\{\s*"')
#: A bracket, or a whole JSON string; an unclosed one (even ending in a backslash) runs to
#: the end, so a string token never fails once started (else the search is quadratic).
_TOKEN = re.compile(r'[\[\]{}]|"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.DOTALL)

#: Characters of a reply searched for calls (replies are capped by the reply limit anyway).
MAX_SCAN = 200_000
#: Calls taken from one reply; later blocks stay prose.
MAX_CALLS = 64
#: Characters the bare-object search may examine, per character of text.
SCAN_WORK = 4
#: Nesting a call object may add around its arguments (the call, a ``function`` wrapper, a
#: list of calls).
_CALL_WRAPPING = 3


@dataclass(frozen=True)
class ParsedCall:
    """One call found in the reply; ``error``: why it cannot run (None when it can)."""

    call: ToolCall
    error: str | None = None


@dataclass(frozen=True)
class ParsedReply:
    """The reply's prose with the call blocks taken out, and the calls in order."""

    content: str
    calls: list[ParsedCall] = field(default_factory=list)


def parse_tool_calls(text: str) -> ParsedReply:
    """Split ``text`` into prose and tool calls. Never raises."""
    if not isinstance(text, str) or not text:
        return ParsedReply(content="")
    spans = _Spans()
    scan = text[:MAX_SCAN]

    for m in _FENCE.finditer(scan):
        if spans.full:
            break
        lang = m.group(1).lower()
        body = m.group(2)
        if lang in CALL_FENCES:
            spans.add(m.start(), m.end(), _calls_from_body(body, required=True))
        elif lang in MAYBE_FENCES:
            maybe = _calls_from_body(body, required=False)
            if maybe:
                spans.add(m.start(), m.end(), maybe)
    for m in _TAG.finditer(scan):
        if spans.full:
            break
        if spans.end_of_span_at(m.start()) is None:
            spans.add(m.start(), m.end(), _calls_from_body(m.group(1), required=True))
    for m in _FUNCTION_TAG.finditer(scan):
        if spans.full:
            break
        if spans.end_of_span_at(m.start()) is None:
            spans.add(m.start(), m.end(), [_function_tag_call(m.group(1), m.group(2))])
    _bare_objects(scan, spans)

    calls: list[ParsedCall] = []
    prose: list[str] = []
    pos = 0
    for start, end, found in sorted(spans.items, key=lambda s: s[0]):
        if start < pos:  # overlaps an earlier span (fence inside a tag, ...)
            continue
        prose.append(text[pos:start])
        calls.extend(found)
        pos = end
    prose.append(text[pos:])
    calls = calls[:MAX_CALLS]
    content = re.sub(r"\n{3,}", "\n\n", "".join(prose)).strip() if calls else text
    return ParsedReply(content=content, calls=calls)


class _Spans:
    """The parts of the text taken by calls (at most MAX_CALLS: every lookup is bounded)."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, list[ParsedCall]]] = []
        self.calls = 0

    @property
    def full(self) -> bool:
        return self.calls >= MAX_CALLS

    def add(self, start: int, end: int, calls: list[ParsedCall]) -> None:
        self.items.append((start, end, calls))
        self.calls += len(calls)

    def overlaps(self, start: int, end: int) -> bool:
        return any(start < s_end and s_start < end for s_start, s_end, _ in self.items)

    def end_of_span_at(self, pos: int) -> int | None:
        for start, end, _ in self.items:
            if start <= pos < end:
                return end
        return None


def _too_deep(limit: int) -> str:
    return f"its arguments are nested more than {limit} levels deep"


def _load_arguments(text: str) -> Any:
    """Arguments written as JSON text, through the one bounded loader."""
    return jsonlimits.loads(text, "its arguments", MAX_ARGUMENT_DEPTH, MAX_ARGUMENT_CHARS)


def _reason(exc: ValueError, otherwise: str) -> str:
    """What went wrong with arguments text, for the error result."""
    if isinstance(exc, jsonlimits.TooDeepError):
        return _too_deep(exc.limit)
    if isinstance(exc, jsonlimits.TooLargeError):
        return str(exc)
    return otherwise


def _calls_from_body(body: str, *, required: bool) -> list[ParsedCall]:
    """Calls in a block's text. ``required``: the block was meant as a call."""
    stripped = body.strip()
    try:
        value: Any = jsonlimits.loads(stripped, "the call", MAX_ARGUMENT_DEPTH + _CALL_WRAPPING)
    except jsonlimits.TooDeepError:
        if required or _looks_like_call(stripped):
            return [_invalid(stripped, _too_deep(MAX_ARGUMENT_DEPTH))]
        return []
    except ValueError:
        value = _first_json_value(stripped)
        if value is None:
            if required or _looks_like_call(stripped):
                return [_invalid(stripped, "it is not valid JSON")]
            return []
    items = value if isinstance(value, list) else [value]
    calls: list[ParsedCall] = []
    for item in items[:MAX_CALLS]:
        if _is_call_shaped(item):
            calls.append(_from_object(item, raw=stripped))
        elif required:
            calls.append(_invalid(stripped, 'it needs "name" and "arguments"'))
    return calls


def _first_json_value(text: str) -> Any:
    """The first JSON object or array in ``text`` (text after it is ignored), or None."""
    match = re.search(r"[{\[]", text)
    if match is None:
        return None
    start = match.start()
    # Qwen2.5-Coder 1.5B's template shows calls as ``{{"name": ..., "arguments": ...}}``, and
    # the model copies the doubled braces: the object is read from the inner one.
    for at in (start, start + 1) if text.startswith("{{", start) else (start,):
        try:
            value, _ = json.JSONDecoder().raw_decode(text, at)
        except (ValueError, RecursionError):  # depth was checked by the caller
            continue
        return value
    return None


def _looks_like_call(text: str) -> bool:
    return '"name"' in text and ('"arguments"' in text or '"parameters"' in text)


def _unwrap(obj: dict[str, Any]) -> dict[str, Any]:
    fn = obj.get("function")
    if isinstance(fn, dict) and "name" in fn:
        return fn
    return obj


def _is_call_shaped(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    obj = _unwrap(obj)
    return isinstance(obj.get("name"), str) and ("arguments" in obj or "parameters" in obj)


def _from_object(obj: dict[str, Any], *, raw: str) -> ParsedCall:
    obj = _unwrap(obj)
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return _invalid(raw, 'the "name" must be a tool name')
    name = name.strip()
    args = obj.get("arguments", obj.get("parameters", {}))
    if args is None:
        args = {}
    if isinstance(args, str):
        text = args.strip()
        if not text:
            args = {}
        else:
            try:
                args = _load_arguments(text)
            except ValueError as exc:
                return ParsedCall(
                    ToolCall(name=name, raw_arguments=args),
                    _reason(exc, "its arguments are a string that is not a JSON object"),
                )
    if not isinstance(args, dict):
        return ParsedCall(
            ToolCall(name=name, raw_arguments=_dump(args)),
            '"arguments" must be a JSON object',
        )
    if value_depth(args, stop_above=MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
        return ParsedCall(ToolCall(name=name, raw_arguments=raw), _too_deep(MAX_ARGUMENT_DEPTH))
    return ParsedCall(ToolCall(name=name, arguments=args))


def _function_tag_call(name: str, body: str) -> ParsedCall:
    text = body.strip()
    if not text:
        return ParsedCall(ToolCall(name=name))
    try:
        args = _load_arguments(text)
    except ValueError as exc:
        return ParsedCall(
            ToolCall(name=name, raw_arguments=text), _reason(exc, "its arguments are not JSON")
        )
    if not isinstance(args, dict):
        return ParsedCall(
            ToolCall(name=name, raw_arguments=text), '"arguments" must be a JSON object'
        )
    return ParsedCall(ToolCall(name=name, arguments=args))


def _bare_objects(text: str, spans: _Spans) -> None:
    """Call-shaped JSON objects (starting ``{"``) written into the prose: only the slice
    bracket matching finds is decoded, within a budget of ``SCAN_WORK`` per character."""
    extents = _Extents(text, SCAN_WORK * len(text) + 10_000)
    keys = _Keys(text)
    pos = 0
    while not spans.full:
        m = _OBJECT_START.search(text, pos)
        if m is None:
            return
        i = m.start()
        taken_until = spans.end_of_span_at(i)
        if taken_until is not None:
            pos = taken_until
            continue
        found = extents.of(i)
        if found is None:
            if extents.exhausted:
                return
            pos = i + 1
            continue
        end, depth = found
        call = _bare_call(text, i, end, depth, keys)
        if call is not None and text[i - 1:i] == "{" and text[end:end + 1] == "}":
            i, end = i - 1, end + 1  # doubled braces (see _first_json_value) are the call's
        if call is not None and not spans.overlaps(i, end):
            spans.add(i, end, [call])
            pos = end
        else:
            pos = i + 1


class _Keys:
    """Where the call keys occur (found once): whether a slice holds one is a binary search,
    not a search of each nested slice (quadratic)."""

    def __init__(self, text: str) -> None:
        self.names = [m.start() for m in re.finditer('"name"', text)]
        self.args = [m.start() for m in re.finditer('"(?:arguments|parameters)"', text)]

    @staticmethod
    def _within(found: list[int], start: int, end: int) -> bool:
        i = bisect.bisect_left(found, start)
        return i < len(found) and found[i] < end

    def name_in(self, start: int, end: int) -> bool:
        return self._within(self.names, start, end)

    def arguments_in(self, start: int, end: int) -> bool:
        return self._within(self.args, start, end)


def _bare_call(text: str, start: int, end: int, depth: int, keys: _Keys) -> ParsedCall | None:
    """The call in the balanced ``{...}`` at ``text[start:end]``, or None."""
    if not keys.name_in(start, end):
        return None
    if depth > MAX_ARGUMENT_DEPTH + _CALL_WRAPPING:
        if not keys.arguments_in(start, end):
            return None
        return _invalid(text[start:end], _too_deep(MAX_ARGUMENT_DEPTH))
    raw = text[start:end]
    try:
        value = jsonlimits.loads(raw, "the call", MAX_ARGUMENT_DEPTH + _CALL_WRAPPING)
    except ValueError:
        return None
    return _from_object(value, raw=raw) if _is_call_shaped(value) else None


class _Extents:
    """Where each bracket that opens a value closes (strings skipped). A scan records every
    bracket it opens on the way, so ``{"{"{"...`` needs two scans (one per string state),
    not one per brace."""

    def __init__(self, text: str, budget: int) -> None:
        self.text = text
        self.budget = budget
        #: open position -> (end, height) or None when it never closes.
        self.known: dict[int, tuple[int, int] | None] = {}

    @property
    def exhausted(self) -> bool:
        return self.budget <= 0

    def of(self, start: int) -> tuple[int, int] | None:
        """(end, nesting height) of the value opening at ``start``, or None."""
        if start not in self.known:
            if self.exhausted:
                return None
            self._scan(start)
        return self.known.get(start)

    def _scan(self, start: int) -> None:
        text = self.text
        limit = min(len(text), start + self.budget)
        stack: list[list[int]] = []  # [open position, height]
        pos = start
        for m in _TOKEN.finditer(text, start, limit):
            ch = text[m.start()]
            pos = m.end()
            if ch in "{[":
                stack.append([m.start(), 1])
            elif ch in "}]" and stack:
                opened, height = stack.pop()
                self.known[opened] = (pos, height)
                if not stack:
                    break
                stack[-1][1] = max(stack[-1][1], height + 1)
        else:
            pos = limit
        self.budget -= pos - start
        if pos >= len(text):  # ran to the end of the text: what is open never closes
            for opened, _height in stack:
                self.known[opened] = None


def _invalid(raw: str, reason: str) -> ParsedCall:
    m = _NAME_IN_TEXT.search(raw)
    name = m.group(1) if m else INVALID_NAME
    return ParsedCall(ToolCall(name=name, raw_arguments=raw), reason)


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
