"""Regular-expression search that cannot hang: RE2 in bounded steps, as ``re`` ran for
minutes on ``(a+)+$`` holding the GIL (docs/ARCHITECTURE.md, "Tool safety beyond paths")."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import re2

#: Memory RE2 may use for one compiled pattern (its DFA cache included).
MAX_REGEX_MEMORY = 32 << 20
#: Longest pattern accepted.
MAX_PATTERN_CHARS = 2_000
#: Bytes scanned per RE2 call; Stop and the time budget are checked between calls.
CHUNK_BYTES = 1 << 20

_LOOKAROUND = re.compile(r"\(\?<?[=!]")
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


class SearchStopped(Exception):
    """The user pressed Stop."""


class PatternError(ValueError):
    """A pattern grep cannot run (the message says why and what to do)."""


class LineSearcher:
    """A compiled pattern that finds the lines of a text it matches."""

    def __init__(self, pattern: str, *, ignore_case: bool = False) -> None:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise PatternError(
                f"The pattern is {len(pattern):,} characters; at most {MAX_PATTERN_CHARS:,} "
                "are accepted."
            )
        if _LOOKAROUND.search(pattern) or _BACKREF.search(pattern):
            raise PatternError(
                "The pattern uses look-ahead/look-behind ((?=, (?!, (?<=, (?<!) or a "
                "back-reference (\\1); grep's regular expressions (RE2) have neither. Search "
                "for the text itself, or for a simpler pattern, and read the lines around it."
            )
        options = re2.Options()
        options.log_errors = False
        options.never_nl = True  # a match never spans lines
        options.max_mem = MAX_REGEX_MEMORY
        options.case_sensitive = not ignore_case
        source = "(?m)" + _line_anchors(pattern)
        try:
            self._regex = re2.compile(source.encode("utf-8", "surrogatepass"), options)
        except re2.error as exc:
            raise PatternError(_compile_message(exc)) from None

    def lines(self, data: bytes, should_stop: Callable[[], bool]) -> Iterator[tuple[int, bytes]]:
        """(line number, line) of every matching line of ``data``; ``should_stop()`` is called
        between steps (True ends the search; it may raise :class:`SearchStopped`)."""
        search = self._regex.search
        n = len(data)
        pos = 0  # always the start of a line
        line_no = 1
        counted_to = 0
        while pos < n:
            if should_stop():
                return
            end = data.find(b"\n", min(n, pos + CHUNK_BYTES))
            chunk_end = n if end == -1 else end
            match = search(data, pos, chunk_end)
            if match is None:
                pos = chunk_end + 1
                continue
            start = match.start()
            if start == n and data.endswith(b"\n"):
                return  # the empty end after a final newline is not a line
            newline = data.rfind(b"\n", pos, start)
            line_start = pos if newline == -1 else newline + 1
            line_end = data.find(b"\n", start)
            if line_end == -1:
                line_end = n
            line_no += data.count(b"\n", counted_to, line_start)
            counted_to = line_start
            yield line_no, data[line_start:line_end].removesuffix(b"\r")
            pos = line_end + 1


def _line_anchors(pattern: str) -> str:
    """Python's ``\\A`` and ``\\Z`` as RE2's line anchors ``^`` and ``$`` (RE2 has no ``\\Z``)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append({"A": "^", "Z": "$"}.get(nxt, ch + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def re2_reason(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return str(text)


def _compile_message(exc: Exception) -> str:
    reason = re2_reason(exc)
    too_large = ("pattern too large", "bad repetition operator", "invalid repetition size")
    if any(word in reason for word in too_large):
        return (
            f"The pattern is too large or too complex to search with ({reason}). Use "
            "smaller counts in {m,n} repetitions, or a simpler pattern."
        )
    return (
        f"The pattern is not a valid regular expression ({reason}). Escape special "
        "characters such as ( [ . * with a backslash."
    )


def stop_check(cancelled: Callable[[], bool], over_time: Callable[[], bool]) -> Callable[[], bool]:
    """A ``should_stop``: raises on Stop, True when over the time budget."""

    def check() -> bool:
        if cancelled():
            raise SearchStopped
        return over_time()

    return check
