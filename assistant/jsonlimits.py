"""Bounded size and nesting for JSON from outside, checked without recursion before ``json``
or pydantic recurse (docs/ARCHITECTURE.md, "JSON from outside")."""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: Deepest nesting of a chat-file line, a settings file or an import document.
MAX_DOCUMENT_DEPTH = 64
#: Deepest nesting of one tool call's arguments object (the object itself is level 1).
MAX_ARGUMENT_DEPTH = 16
#: Longest arguments text of one tool call (about 37,000 tokens: more than the longest
#: reply the app asks a model for, so no real call is refused, and a runaway one costs a
#: bounded parse).
MAX_ARGUMENT_CHARS = 150_000

_TEXT_SPECIAL = re.compile(r'[\[\]{}"]')
_BYTES_SPECIAL = re.compile(rb'[\[\]{}"]')
_STRING_END = re.compile(r'["\\]')
_BYTES_STRING_END = re.compile(rb'["\\]')


class TooDeepError(ValueError):
    def __init__(self, what: str, limit: int) -> None:
        self.limit = limit
        super().__init__(f"{what} is nested more than {limit} levels deep")


class TooLargeError(ValueError):
    def __init__(self, what: str, limit: int) -> None:
        self.limit = limit
        super().__init__(f"{what} is longer than {limit:,} characters")


def text_depth(text: str | bytes, stop_above: int | None = None) -> int:
    """The deepest bracket nesting in ``text`` (strings skipped), stopping past ``stop_above``."""
    is_bytes = isinstance(text, bytes)
    special = _BYTES_SPECIAL if is_bytes else _TEXT_SPECIAL
    string_end = _BYTES_STRING_END if is_bytes else _STRING_END
    quote = b'"' if is_bytes else '"'
    depth = deepest = 0
    pos = 0
    n = len(text)
    while pos < n:
        m = special.search(text, pos)  # type: ignore[arg-type]
        if m is None:
            break
        ch = m.group()
        pos = m.end()
        if ch == quote:
            pos = _skip_string(text, pos, string_end)
        elif ch in ("{", "[", b"{", b"["):
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_above is not None and deepest > stop_above:
                    return deepest
        elif depth:
            depth -= 1
    return deepest


def _skip_string(text: str | bytes, pos: int, string_end: re.Pattern[Any]) -> int:
    """The index after the string that starts at ``pos`` (its end when unterminated)."""
    backslash = b"\\" if isinstance(text, bytes) else "\\"
    while True:
        m = string_end.search(text, pos)
        if m is None:
            return len(text)
        if m.group() == backslash:
            pos = m.end() + 1
            continue
        return m.end()


def reject_constant(name: str) -> Any:
    """``parse_constant``: NaN and Infinity are refused, as they could not be written back."""
    raise ValueError(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    """``parse_float``: a number too large for a float (``1e999``) is refused like NaN."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is out of range")
    return value


def loads(
    text: str | bytes, what: str, limit: int = MAX_DOCUMENT_DEPTH, max_chars: int | None = None
) -> Any:
    """``json.loads`` after the size and depth checks; raises only ``ValueError``."""
    if max_chars is not None and len(text) > max_chars:
        raise TooLargeError(what, max_chars)
    if text_depth(text, stop_above=limit) > limit:
        raise TooDeepError(what, limit)
    try:
        return json.loads(text, parse_constant=reject_constant, parse_float=finite_float)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise TooDeepError(what, limit) from None


def value_depth(value: Any, stop_above: int | None = None) -> int:
    """Nesting depth of a decoded value (a scalar is 0, ``{}`` is 1), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if stop_above is not None and deepest > stop_above:
                return deepest
        stack.extend((child, depth) for child in children)
    return deepest
