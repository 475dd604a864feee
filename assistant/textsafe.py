"""Text from outside made valid and visible (issue 47): lone surrogates and invalid bytes
never get past a boundary (standard input, file names, a server's stream, tool arguments),
and control characters never reach the terminal as they are.

Three forms, one per destination:

* :func:`clean_text` for what is stored and sent on (a chat message, a tool's output): surrogate
  pairs joined, lone surrogates replaced by U+FFFD, visibly;
* :func:`shown_name` for a file name as the kernel has it (bytes that are not UTF-8 arrive as
  ``\\udc80``-``\\udcff``, Python's *surrogateescape*): those bytes and control characters
  written as ``\\xHH``, which :func:`name_from_shown` turns back into the name on disk;
* :func:`terminal_text` for what the terminal prints: C0 controls (but newline and tab), DEL,
  C1 controls and the escape character as ``\\xHH``, lone surrogates as ``\\udXXX``.
"""

from __future__ import annotations

import hashlib
import re

_SURROGATE = re.compile("[\ud800-\udfff]")
#: A lone surrogate: a high one not followed by a low one, a low one not after a high one.
_LONE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")
#: What a terminal would act on rather than show (newline and tab are text).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Bytes a file name shows escaped: controls (C0, DEL; C1 as their UTF-8 bytes).
_NAME_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
#: Runs of ``\xHH`` in a shown name.
_ESCAPED_BYTES = re.compile(r"(?:\\x[0-9a-fA-F]{2})+")


def paired(text: str) -> str:
    """``text`` with adjacent surrogate pairs joined into the character they spell."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def valid_text(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD (pairs are not joined)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


def clean_text(text: str) -> str:
    """``text`` as valid Unicode: surrogate pairs joined, lone surrogates as U+FFFD."""
    return valid_text(paired(text))


def argument_text(text: str) -> str:
    """A string given as a tool argument, as valid text: surrogate pairs joined, a file name's
    byte that is not UTF-8 (U+DC80-U+DCFF) as the ``\\xHH`` that names that file, any other
    lone surrogate as U+FFFD."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text

    def visible(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"

    return _LONE.sub(visible, paired(text))


def decode_bytes(data: bytes) -> str:
    """Bytes from outside as text: invalid UTF-8 shown as U+FFFD (never an exception)."""
    return data.decode("utf-8", errors="replace")


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 for a digest or a key: a lone surrogate is encoded as it is
    (*surrogatepass*), so two texts differing only there still differ; never an exception."""
    return text.encode("utf-8", "surrogatepass")


def digest(text: str, size: int = 24) -> str:
    """A short sha256 digest of any text (lone surrogates included)."""
    return hashlib.sha256(utf8(text)).hexdigest()[:size]


def terminal_text(text: str) -> str:
    """``text`` safe to print: controls but newline and tab as ``\\xHH`` (an escape sequence
    shows as ``\\x1b[2J``; a CR before a newline is dropped), lone surrogates as ``\\udXXX``;
    valid text otherwise unchanged."""
    if text.isascii() and text.isprintable():
        return text
    out = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text.replace("\r\n", "\n"))
    if _SURROGATE.search(out) is not None:
        out = _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", paired(out))
    return out


def shown_name(name: str) -> str:
    """A file name (or a path) as tools show it: bytes that are not UTF-8 and control
    characters as ``\\xHH`` (``caf\\xe9.txt``); :func:`name_from_shown` reverses it."""
    if name.isascii() and name.isprintable():
        return name
    if not _only_escapes(name):  # a surrogate no file system name has (from JSON)
        return terminal_text(name)
    out: list[str] = []
    for ch in name:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif _NAME_CONTROL.match(ch):
            out.append("".join(f"\\x{b:02x}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out)


def name_from_shown(shown: str) -> str:
    """The name on disk that :func:`shown_name` showed as ``shown`` (``\\xHH`` runs decoded
    as bytes; bytes that are not UTF-8 become *surrogateescape* characters again)."""

    def unescape(match: re.Match[str]) -> str:
        run = match.group()
        data = bytes(int(run[i + 2 : i + 4], 16) for i in range(0, len(run), 4))
        return data.decode("utf-8", errors="surrogateescape")

    return _ESCAPED_BYTES.sub(unescape, shown)


def has_escapes(shown: str) -> bool:
    """Whether ``shown`` holds a ``\\xHH`` escape (it may name a file shown escaped)."""
    return "\\x" in shown and _ESCAPED_BYTES.search(shown) is not None


def _only_escapes(name: str) -> bool:
    """Whether every surrogate in ``name`` is a *surrogateescape* byte (``\\udc80``-``\\udcff``)."""
    return all(0xDC80 <= ord(m.group()) <= 0xDCFF for m in _SURROGATE.finditer(name))
