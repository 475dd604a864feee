"""Finding, listing and exporting saved chats (used by both faces through the service)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from pathlib import Path

from assistant.sessions.store import ChatSummary, SessionStore

#: ``--resume last`` / ``/resume last``: the most recently updated chat.
LAST = "last"


def find_chat(chats: Sequence[ChatSummary], ref: str) -> ChatSummary | None:
    """The chat ``ref`` names: an exact id, ``last``, or (case-insensitive) part of a
    title, newest first. Unreadable chats are skipped."""
    readable = [c for c in chats if not c.broken]
    ref = ref.strip()
    if not ref:
        return None
    if ref.lower() == LAST:
        return readable[0] if readable else None
    for chat in readable:
        if chat.id == ref:
            return chat
    needle = ref.lower()
    return next((c for c in readable if needle in c.title.lower()), None)


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


def export_chat(store: SessionStore, chat_id: str, target: Path) -> Path:
    """Write a chat to ``target``: ``.json`` as OpenAI-format JSON, anything else as
    Markdown, through a temporary file renamed into place (a failed export leaves an
    existing file as it was; see ``SessionStore.export_to_file``). Returns the path
    written (``~`` expanded)."""
    path = target.expanduser()
    store.export_to_file(chat_id, path)
    return path
