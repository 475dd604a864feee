"""Reading files as text: binary and non-UTF-8 files are reported, never dumped."""

from __future__ import annotations

from assistant.tools.workspace import Workspace

#: How much of a file is sniffed for NUL bytes to call it binary.
SNIFF_BYTES = 8192


class NotTextError(ValueError):
    """The file is binary or not UTF-8 (the message says which, for the model)."""


def read_text(workspace: Workspace, path: str, *, max_bytes: int) -> tuple[str, str]:
    """A workspace file as UTF-8 text and how it is shown; raises :class:`NotTextError`."""
    data, shown = workspace.read_bytes(path, max_bytes)
    return decode_text(data, shown), shown


def decode_text(data: bytes, shown_as: str) -> str:
    if b"\x00" in data[:SNIFF_BYTES]:
        raise NotTextError(
            f"{shown_as} is a binary file ({len(data):,} bytes); its contents are not shown."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotTextError(
            f"{shown_as} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start:,}); its contents are not shown."
        ) from None
    return text.removeprefix("\ufeff")


def clip_line(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return line[:limit] + f" [... {len(line) - limit:,} more characters]"
