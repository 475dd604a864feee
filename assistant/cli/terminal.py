"""The terminal chat's two edges (issue 47): what it reads from standard input becomes valid
text (bytes that are not UTF-8 as U+FFFD), and what it prints shows control characters
instead of obeying them (a model's ``ESC ] 0 ; title BEL`` or ``ESC [ 2 J`` is printed as
``\\x1b]0;title\\x07`` and ``\\x1b[2J``, so no reply can retitle or clear the terminal)."""

from __future__ import annotations

import io
import sys
from typing import Protocol, TextIO

from assistant.textsafe import clean_text, decode_bytes, terminal_text


class Writer(Protocol):
    """Where the terminal chat writes: ``write`` and ``flush``."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class Visible:
    """``stream`` printing text only: control characters but newline and tab, and lone
    surrogates, made visible (:func:`~assistant.textsafe.terminal_text`)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str, /) -> int:
        return self.stream.write(terminal_text(text))

    def flush(self) -> None:
        self.stream.flush()


def never_fail_to_encode() -> None:
    """Standard output and error escape what their encoding cannot take (an ASCII locale)
    instead of raising in the middle of a reply."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def read_line() -> str | None:
    """The next line of standard input without its newline, as valid text (bytes that are not
    UTF-8 are U+FFFD); None at the end."""
    raw = getattr(sys.stdin, "buffer", None)
    while True:
        try:
            line = raw.readline() if raw is not None else sys.stdin.readline()
        except KeyboardInterrupt:  # pragma: no cover - only between handler swaps
            continue
        if not line:
            return None
        text = decode_bytes(line) if isinstance(line, bytes) else clean_text(line)
        return text.rstrip("\n")
