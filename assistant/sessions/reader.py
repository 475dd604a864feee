"""Reading a chat file, keeping every entry that can be read (what counts as torn or damaged:
docs/ARCHITECTURE.md, "Damaged chats")."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assistant.jsonlimits import MAX_DOCUMENT_DEPTH, finite_float, reject_constant, text_depth
from assistant.sessions.entries import (
    SCHEMA_VERSION,
    UNKNOWN_TYPE,
    ChatHeader,
    Entry,
    parse_entry,
    parse_header,
)
from assistant.sessions.errors import ChatCorruptError, ChatLoadError, ChatVersionError
from assistant.sessions.relink import relink

BOM = b"\xef\xbb\xbf"
SECOND_HEADER = "a second header line"
_DAY = 86_400.0


@dataclass(frozen=True)
class TornTail:
    """An incomplete last line: its 1-based line number, byte offset and bytes."""

    line: int
    offset: int
    data: bytes


@dataclass(frozen=True)
class DamagedLine:
    """A line that could not be read: 1-based line number, why, and its bytes."""

    line: int
    reason: str
    data: bytes


@dataclass
class ChatFile:
    """A parsed chat file. ``entries`` are the readable entries, in file order."""

    path: Path
    header: ChatHeader
    entries: list[Entry]
    warnings: list[str] = field(default_factory=list)
    torn: TornTail | None = None
    #: The last entry is complete but its newline is missing (add one before appending).
    needs_newline: bool = False
    damaged: list[DamagedLine] = field(default_factory=list)
    #: (line number, entry id) of entries re-attached because their parent was damaged.
    reattached: list[tuple[int, str]] = field(default_factory=list)
    #: The active position when it is not the last entry (a damaged chat whose lost last
    #: line moved back to an earlier entry); see :attr:`leaf`.
    active: str | None = None
    #: (line number, entry id) of entries found before the entry they follow (lines moved).
    out_of_order: list[tuple[int, str]] = field(default_factory=list)

    @property
    def leaf(self) -> str | None:
        """The active position: the last entry's id, unless damage said otherwise."""
        if self.active is not None:
            return self.active
        return self.entries[-1].id if self.entries else None

    @property
    def needs_repair(self) -> bool:
        return bool(self.damaged or self.reattached or self.out_of_order)

    def damage_summary(self) -> str:
        """One paragraph naming the damaged lines (empty when there are none)."""
        if not self.needs_repair:
            return ""
        parts = [f"line {d.line} ({d.reason})" for d in self.damaged[:5]]
        if len(self.damaged) > 5:
            parts.append(f"{len(self.damaged) - 5} more")
        text = ""
        if parts:
            noun = "line" if len(self.damaged) == 1 else "lines"
            text = f"{len(self.damaged)} {noun} of {self.path.name} could not be read: "
            text += "; ".join(parts) + "."
        if self.reattached:
            text += (
                f" The entries on line(s) {_numbers(self.reattached)} followed a damaged line "
                "and are shown where it was."
            )
        if self.out_of_order:
            text += (
                f" The entries on line(s) {_numbers(self.out_of_order)} come before the entries "
                "they follow (lines were moved); they are shown in their place."
            )
        return text.strip()


def _numbers(lines: list[tuple[int, str]]) -> str:
    """The first five line numbers, "..." after them when there are more."""
    return ", ".join(str(n) for n, _ in lines[:5]) + ("..." if len(lines) > 5 else "")


class _TornLine(Exception):
    pass


class _BadLine(ValueError):
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

    header, header_problem = _read_header(path, lines[0])
    out = ChatFile(path=path, header=header or _stand_in_header(path), entries=[])
    if header is not None and header.chat_id != path.name.removesuffix(".jsonl"):
        out.warnings.append(
            f"The header names chat {header.chat_id!r} but the file is {path.name}; "
            "the file name is used."
        )
    first_line_of: dict[str, tuple[int, bytes]] = {}
    readable: list[tuple[int, Entry]] = []
    # Line 1 is read as an entry too when it is not a header (lines moved around).
    offset = 0 if header is None else len(lines[0]) + 1
    last = len(lines) - 1
    for index in range(0 if header is None else 1, len(lines)):
        raw = lines[index]
        lineno = index + 1
        is_last = index == last
        complete = not is_last or ends_with_newline
        try:
            entry = _parse_line(raw, complete=complete, tolerate_torn=is_last)
        except _TornLine:
            out.torn = TornTail(line=lineno, offset=offset, data=data[offset:])
            break
        except _BadLine as exc:
            offset += len(raw) + 1
            if header is None and str(exc) == SECOND_HEADER:
                with contextlib.suppress(ValueError):  # the header, found further down
                    header = parse_header(_json(raw.removeprefix(BOM)))
                    out.header = header
                    continue
            reason = header_problem if index == 0 and header_problem else str(exc)
            out.damaged.append(DamagedLine(lineno, reason, raw))
            continue
        if raw.startswith(BOM):
            out.warnings.append(
                f"Line {lineno} starts with a byte-order mark; it was read without it."
            )
        offset += len(raw) + 1
        if entry is None:
            continue
        seen = first_line_of.get(entry.id)
        if seen is not None:
            same = seen[1].removeprefix(BOM) == raw.removeprefix(BOM)
            reason = (f"a copy of line {seen[0]}" if same
                      else f"entry id {entry.id!r} is already used on line {seen[0]}")
            out.damaged.append(DamagedLine(lineno, reason, raw))
            continue
        first_line_of[entry.id] = (lineno, raw)
        readable.append((lineno, entry))
    last_line = len(lines) - (1 if out.torn is not None else 0)
    if any(d.line == last_line and d.reason.startswith(UNKNOWN_TYPE) for d in out.damaged):
        last_line = 0  # an entry this version does not know (not damage): nothing to follow
    # A torn last line still names its entry and the entry's parent: what hung from it
    # (lines moved above it) is followed through it like through any damaged line.
    unreadable = [(d.line, d.data) for d in out.damaged]
    if out.torn is not None:
        unreadable.append((out.torn.line, out.torn.data))
    out.entries, out.reattached, out.active, out.out_of_order = relink(
        readable, unreadable, last_line, _window(path, out.header)
    )
    if header is None and not out.entries:
        raise ChatCorruptError(path, header_problem or "no entries", 1)
    if header is None:
        out.warnings.append(
            f"Line 1 of {path.name} is not the chat's header ({header_problem}); the chat "
            "was read without it."
        )
    # the last line (an entry, or the header itself) is complete but lost its newline
    out.needs_newline = out.torn is None and not ends_with_newline
    return out


def _json(raw: bytes) -> Any:
    return json.loads(raw.decode("utf-8"), parse_constant=reject_constant, parse_float=finite_float)


def _window(path: Path, header: ChatHeader) -> tuple[float, float] | None:
    """When entries can have been written: a day before creation to a day after the last change."""
    try:
        modified = path.stat().st_mtime
    except OSError:
        return None
    return min(header.created, modified) - _DAY, modified + _DAY


def _stand_in_header(path: Path) -> ChatHeader:
    try:
        created = path.stat().st_mtime
    except OSError:
        created = 0.0
    return ChatHeader(
        schema_version=SCHEMA_VERSION, chat_id=path.name.removesuffix(".jsonl"), created=created
    )


def _read_header(path: Path, raw: bytes) -> tuple[ChatHeader | None, str | None]:
    """(header, None), or (None, why line 1 is not a header)."""
    raw = raw.removeprefix(BOM)
    if text_depth(raw, stop_above=MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH:
        return None, f"the first line is nested more than {MAX_DOCUMENT_DEPTH} levels deep"
    try:
        obj = _json(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, "the first line is not JSON (not a chat file?)"
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
        return parse_header(obj), None
    except ValueError as exc:
        return None, str(exc)


def _parse_line(raw: bytes, *, complete: bool, tolerate_torn: bool) -> Entry | None:
    """One entry (None: blank line); ``_TornLine`` when the last line is cut, else ``_BadLine``."""
    if not raw.strip():
        return None
    raw = raw.removeprefix(BOM)
    if text_depth(raw, stop_above=MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH:
        if tolerate_torn and not complete:
            raise _TornLine
        raise _BadLine(f"the line is nested more than {MAX_DOCUMENT_DEPTH} levels deep")
    try:
        obj = _json(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        if tolerate_torn and not complete:
            raise _TornLine from None
        reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else "not valid JSON"
        raise _BadLine(f"the line is {reason}") from None
    try:
        return parse_entry(obj)
    except (ValueError, RecursionError) as exc:
        if tolerate_torn and not complete:
            raise _TornLine from None
        raise _BadLine(str(exc) if isinstance(exc, ValueError) else "too deeply nested") from None
