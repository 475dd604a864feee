"""Finding, listing, searching, repairing and exporting saved chats (both faces, through the
service)."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assistant import paths
from assistant.sessions.entries import MessageEntry
from assistant.sessions.errors import SessionError
from assistant.sessions.reader import read_chat_file
from assistant.sessions.store import ChatSummary, SessionStore

#: ``--resume last`` / ``/resume last``: the most recently updated chat.
LAST = "last"


def find_chat(chats: Sequence[ChatSummary], ref: str) -> ChatSummary | None:
    """The chat ``ref`` names: an id, ``last``, or part of a title, newest first (readable only)."""
    readable = [c for c in chats if not c.broken]
    ref = ref.strip()
    if not ref:
        return None
    if ref.lower() == LAST:
        return readable[0] if readable else None
    needle = ref.lower()
    by_id = (c for c in readable if c.id == ref)
    return next(by_id, next((c for c in readable if needle in c.title.lower()), None))


def saved_chats(store: SessionStore | None = None) -> list[ChatSummary]:
    """The saved chats, newest first (in the window's store unless told); raises OSError or
    SessionError when the folder cannot be read."""
    return (store or SessionStore()).list_chats()


@dataclass(frozen=True)
class RepairedCopy:
    """A damaged chat's repaired copy, written beside the original (which is kept)."""

    chat_id: str
    title: str
    messages: int


def repair_copy(chat_id: str, store: SessionStore | None = None) -> RepairedCopy:
    """Write a repaired copy of ``chat_id``; raises OSError or SessionError when it cannot."""
    store = store or SessionStore()
    copy_id = store.repair(chat_id)
    with store.open(copy_id) as copy:
        return RepairedCopy(copy_id, copy.title, len(copy.conversation.messages))


def _when(timestamp: float) -> str:
    return _dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def chat_lines(chats: Sequence[ChatSummary], limit: int | None = None) -> list[str]:
    """One line per chat: id, last change, message count, title (newest first)."""
    lines: list[str] = []
    for chat in list(chats)[:limit]:
        if chat.broken:
            lines.append(f"{chat.id}  (unreadable: {chat.error})")
            continue
        count = f"{chat.message_count} message{'s' if chat.message_count != 1 else ''}"
        mark = "  (damaged: opens read-only; `assistant repair` fixes it)" if chat.damaged else ""
        lines.append(f"{chat.id}  {_when(chat.updated)}  {count:>12}  {chat.title}{mark}")
    return lines


_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]+')


def export_file_name(title: str, suffix: str = ".md") -> str:
    """A file name made from a chat's title (characters file systems refuse removed)."""
    name = " ".join(_UNSAFE.sub(" ", title).split()).strip(" .")[:80].rstrip(" .")
    return (name or "chat") + suffix


def suggested_export_path(title: str) -> Path:
    """Where ``/export`` offers to save: the chat's title, in the user's documents."""
    return paths.documents_dir() / export_file_name(title)


#: Characters of context either side of a search hit in its snippet.
SNIPPET = 36


def snippet(text: str, needle: str) -> str:
    """The words around the first (case-insensitive) occurrence of ``needle`` in ``text``."""
    flat = " ".join(text.split())
    at = flat.lower().find(needle.lower())
    if at < 0:
        return ""
    start, end = max(0, at - SNIPPET), min(len(flat), at + len(needle) + SNIPPET)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


class ChatSearch:
    """Finds chats whose messages (on any branch) contain some text; each chat's texts are kept
    until its file changes, so searching as the user types reads only what changed."""

    def __init__(self) -> None:
        self._texts: dict[Path, tuple[tuple[int, int], list[str]]] = {}

    def _messages(self, path: Path) -> list[str]:
        try:
            st = path.stat()
        except OSError:
            return []
        key = (st.st_size, st.st_mtime_ns)
        cached = self._texts.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            entries = read_chat_file(path).entries
        except (OSError, SessionError, ValueError):
            return []
        texts = [e.message.content for e in entries
                 if isinstance(e, MessageEntry) and e.message.role in ("user", "assistant", "tool")]
        self._texts[path] = (key, texts)
        return texts

    def search(self, chats: dict[str, Path], needle: str) -> dict[str, str]:
        """Of ``chats``, those with a message containing ``needle``: id -> a snippet."""
        needle = " ".join(needle.split())
        if not needle:
            return {}
        low = needle.lower()
        found: dict[str, str] = {}
        for chat_id, path in chats.items():
            for text in self._messages(path):
                if low in " ".join(text.split()).lower():
                    found[chat_id] = snippet(text, needle)
                    break
        for stale in set(self._texts) - set(chats.values()):
            del self._texts[stale]
        return found
