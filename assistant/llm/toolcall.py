"""Finding tool calls in a model's reply text.

Small models write tool calls in many shapes; all of these are recognized:

* the text protocol's fenced block (``` ```tool_call ``` ```; also ``tool``, ``tool_code``,
  ``function_call``), whose content must be a call;
* ``<tool_call>...</tool_call>`` tags (Hermes/Qwen style) and ``<function=NAME>{...}</function>``;
* a fenced ``json`` block (or one with no language) and a bare JSON object in the text,
  taken as a call when they have the shape of one (``name`` plus ``arguments``);
* ``arguments`` as an object or as a JSON string holding one (``parameters`` is accepted
  for ``arguments``, and ``{"function": {...}}`` wrappers and lists of calls are unwrapped).

Call ids are always generated here (ids a model writes are ignored, they may repeat).
A block that is meant as a call but cannot be understood (bad JSON, no name, arguments that
are not an object) becomes a :class:`ParsedCall` with ``error`` set; the agent answers it
with an error tool result that shows the expected format. Nothing here raises: any text
gives a :class:`ParsedReply`. An unclosed block at the end of the reply (the model ran out
of tokens) is read to the end of the text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from assistant.conversation import ToolCall

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
_MAX_SCAN = 200_000


@dataclass(frozen=True)
class ParsedCall:
    """One call found in the reply.

    ``error`` is None when the call can be checked and run, else a short reason such as
    "it is not valid JSON" that the agent puts into the error result.
    """

    call: ToolCall
    error: str | None = None


@dataclass(frozen=True)
class ParsedReply:
    """The reply's prose with the call blocks taken out, and the calls in order."""

    content: str
    calls: list[ParsedCall] = field(default_factory=list)

    @property
    def has_calls(self) -> bool:
        return bool(self.calls)


def parse_tool_calls(text: str) -> ParsedReply:
    """Split ``text`` into prose and tool calls. Never raises."""
    if not isinstance(text, str) or not text:
        return ParsedReply(content="")
    spans: list[tuple[int, int, list[ParsedCall]]] = []
    scan = text[:_MAX_SCAN]

    for m in _FENCE.finditer(scan):
        lang = m.group(1).lower()
        body = m.group(2)
        if lang in CALL_FENCES:
            spans.append((m.start(), m.end(), _calls_from_body(body, required=True)))
        elif lang in MAYBE_FENCES:
            maybe = _calls_from_body(body, required=False)
            if maybe:
                spans.append((m.start(), m.end(), maybe))
    for m in _TAG.finditer(scan):
        if not _inside(m.start(), spans):
            spans.append((m.start(), m.end(), _calls_from_body(m.group(1), required=True)))
    for m in _FUNCTION_TAG.finditer(scan):
        if not _inside(m.start(), spans):
            spans.append((m.start(), m.end(), [_function_tag_call(m.group(1), m.group(2))]))
    spans.extend(_bare_objects(scan, spans))

    spans.sort(key=lambda s: s[0])
    calls: list[ParsedCall] = []
    prose: list[str] = []
    pos = 0
    for start, end, found in spans:
        if start < pos:  # overlaps an earlier span (fence inside a tag, ...)
            continue
        prose.append(text[pos:start])
        calls.extend(found)
        pos = end
    prose.append(text[pos:])
    content = re.sub(r"\n{3,}", "\n\n", "".join(prose)).strip() if calls else text
    return ParsedReply(content=content, calls=calls)


def _inside(pos: int, spans: list[tuple[int, int, list[ParsedCall]]]) -> bool:
    return any(start <= pos < end for start, end, _ in spans)


def _calls_from_body(body: str, *, required: bool) -> list[ParsedCall]:
    """Calls in a block's text. ``required``: the block was meant as a call."""
    stripped = body.strip()
    try:
        value: Any = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        value = _first_json_value(stripped)
        if value is None:
            if required or _looks_like_call(stripped):
                return [_invalid(stripped, "it is not valid JSON")]
            return []
    items = value if isinstance(value, list) else [value]
    calls: list[ParsedCall] = []
    for item in items:
        if _is_call_shaped(item):
            calls.append(_from_object(item, raw=stripped))
        elif required:
            calls.append(_invalid(stripped, 'it needs "name" and "arguments"'))
    return calls


def _first_json_value(text: str) -> Any:
    """The first JSON object or array in ``text`` (text after it is ignored), or None."""
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(text, i)
            except (json.JSONDecodeError, RecursionError):
                return None
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
                args = json.loads(text)
            except (json.JSONDecodeError, RecursionError):
                return ParsedCall(
                    ToolCall(name=name, raw_arguments=args),
                    "its arguments are a string that is not a JSON object",
                )
    if not isinstance(args, dict):
        return ParsedCall(
            ToolCall(name=name, raw_arguments=_dump(args)),
            '"arguments" must be a JSON object',
        )
    return ParsedCall(ToolCall(name=name, arguments=args))


def _function_tag_call(name: str, body: str) -> ParsedCall:
    text = body.strip()
    if not text:
        return ParsedCall(ToolCall(name=name))
    try:
        args = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return ParsedCall(ToolCall(name=name, raw_arguments=text), "its arguments are not JSON")
    if not isinstance(args, dict):
        return ParsedCall(
            ToolCall(name=name, raw_arguments=text), '"arguments" must be a JSON object'
        )
    return ParsedCall(ToolCall(name=name, arguments=args))


def _bare_objects(
    text: str, taken: list[tuple[int, int, list[ParsedCall]]]
) -> list[tuple[int, int, list[ParsedCall]]]:
    """Call-shaped JSON objects written straight into the prose."""
    found: list[tuple[int, int, list[ParsedCall]]] = []
    decoder = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        if _inside(i, taken):
            i = text.find("{", i + 1)
            continue
        try:
            value, end = decoder.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            i = text.find("{", i + 1)
            continue
        if _is_call_shaped(value) and not _overlaps(i, end, taken):
            found.append((i, end, [_from_object(value, raw=text[i:end])]))
            i = text.find("{", end)
        else:
            i = text.find("{", i + 1)
    return found


def _overlaps(start: int, end: int, spans: list[tuple[int, int, list[ParsedCall]]]) -> bool:
    return any(start < s_end and s_start < end for s_start, s_end, _ in spans)


def _invalid(raw: str, reason: str) -> ParsedCall:
    m = _NAME_IN_TEXT.search(raw)
    name = m.group(1) if m else INVALID_NAME
    return ParsedCall(
        ToolCall(name=name, raw_arguments=raw),
        reason,
    )


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
