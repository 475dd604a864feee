"""Reading and appending chat files, crash-safely.

Writing: an entry is one ``os.write`` loop of a newline-terminated line followed by
``fsync``; :meth:`JournalWriter.append` returns only after that. A failed write is cut back
off the file so a half line never sits before later entries.

Reading: :func:`read_chat_file` parses every line. A damaged *last* line is what a crash
mid-write leaves; it is reported as :class:`TornTail` (never an error) and
:func:`move_torn_tail_aside` moves it to ``<file>.corrupt``. Anything else that is wrong
raises :class:`ChatCorruptError` or :class:`ChatVersionError` with the line number.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from assistant.sessions.entries import (
    SCHEMA_VERSION,
    ChatHeader,
    Entry,
    encode_line,
    parse_entry,
    parse_header,
)
from assistant.sessions.errors import ChatCorruptError, ChatLoadError, ChatVersionError


@dataclass(frozen=True)
class TornTail:
    """An incomplete last line: its 1-based line number, byte offset and bytes."""

    line: int
    offset: int
    data: bytes


@dataclass
class ChatFile:
    """A parsed chat file. ``entries`` are in file order."""

    path: Path
    header: ChatHeader
    entries: list[Entry]
    warnings: list[str] = field(default_factory=list)
    torn: TornTail | None = None
    #: The last entry is complete but its newline is missing (add one before appending).
    needs_newline: bool = False


class _TornLine(Exception):
    pass


def read_chat_file(path: Path) -> ChatFile:
    """Parse a chat file without changing it. See the module docstring for the rules."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ChatLoadError(path, f"cannot read the file ({exc.strerror or exc})") from None
    if not data.strip():
        raise ChatCorruptError(path, "the file is empty (not a chat file)")
    lines = data.split(b"\n")
    ends_with_newline = lines[-1] == b""
    if ends_with_newline:
        lines.pop()

    header = _read_header(path, lines[0])
    out = ChatFile(path=path, header=header, entries=[])
    if header.chat_id != path.name.removesuffix(".jsonl"):
        out.warnings.append(
            f"The header names chat {header.chat_id!r} but the file is {path.name}; "
            "the file name is used."
        )
    seen: set[str] = set()
    offset = len(lines[0]) + 1
    last = len(lines) - 1
    for index in range(1, len(lines)):
        raw = lines[index]
        lineno = index + 1
        is_last = index == last
        complete = not is_last or ends_with_newline
        try:
            entry = _parse_line(raw, complete=complete, tolerate_torn=is_last)
        except _TornLine:
            out.torn = TornTail(line=lineno, offset=offset, data=data[offset:])
            break
        except ValueError as exc:
            raise ChatCorruptError(path, str(exc), lineno) from None
        offset += len(raw) + 1
        if entry is None:
            continue
        if entry.id in seen:
            raise ChatCorruptError(path, f"entry id {entry.id!r} appears twice", lineno)
        if entry.parent_id is not None and entry.parent_id not in seen:
            raise ChatCorruptError(
                path, f"entry {entry.id!r} names an unknown parent {entry.parent_id!r}", lineno
            )
        seen.add(entry.id)
        out.entries.append(entry)
    # the last line (an entry, or the header itself) is complete but lost its newline
    out.needs_newline = out.torn is None and not ends_with_newline
    return out


def _read_header(path: Path, raw: bytes) -> ChatHeader:
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ChatCorruptError(path, "the first line is not JSON (not a chat file?)", 1) from None
    if isinstance(obj, dict) and obj.get("type") == "header":
        version = obj.get("schema_version")
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise ChatVersionError(
                path,
                f"it was written by a newer version of the app (format {version}; this "
                f"version reads up to {SCHEMA_VERSION}). Update the app to open it.",
                1,
            )
    try:
        return parse_header(obj)
    except ValueError as exc:
        raise ChatCorruptError(path, str(exc), 1) from None


def _parse_line(raw: bytes, *, complete: bool, tolerate_torn: bool) -> Entry | None:
    """One entry, ``None`` for a blank line; ``_TornLine`` when the last line is cut short."""
    if not raw.strip():
        return None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        if tolerate_torn:
            raise _TornLine from None
        reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else "not valid JSON"
        raise ValueError(f"the line is {reason}") from None
    try:
        return parse_entry(obj)
    except ValueError:
        if tolerate_torn and not complete:
            raise _TornLine from None
        raise
    except RecursionError:
        raise ValueError("the line is nested too deeply") from None


def move_torn_tail_aside(path: Path, torn: TornTail) -> Path:
    """Append the torn bytes to ``<file>.corrupt`` and cut them off the chat file.

    Call only while holding the chat's lock. Returns the ``.corrupt`` path.
    """
    aside = path.with_name(path.name + ".corrupt")
    with aside.open("ab") as fh:
        fh.write(torn.data if torn.data.endswith(b"\n") else torn.data + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, torn.offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    return aside


def create_chat_file(path: Path, header: ChatHeader) -> None:
    """Write a new file holding only the header, atomically (temp file, fsync, rename)."""
    if path.exists():
        raise FileExistsError(path)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        fh.write(encode_line(header))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class JournalWriter:
    """Appends entries to one chat file; each :meth:`append` is on disk when it returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND)
        self._size = os.fstat(self._fd).st_size

    def ensure_newline(self) -> None:
        """Terminate a last line whose newline was lost (the entry itself was complete)."""
        self._write(b"\n")

    def append(self, entry: Entry) -> None:
        self._write(encode_line(entry))

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise ValueError("the journal is closed")
        fd = self._fd
        start = self._size
        view = memoryview(data)
        try:
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except BaseException:
            try:  # never leave half a line in front of later entries
                os.ftruncate(fd, start)
                os.fsync(fd)
            except OSError:
                pass
            raise
        self._size = start + len(data)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
