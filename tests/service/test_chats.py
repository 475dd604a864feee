"""Finding and listing saved chats."""

from __future__ import annotations

from pathlib import Path

from assistant.service.chats import chat_lines, find_chat
from assistant.sessions.store import ChatSummary


def _chat(chat_id: str, title: str, updated: float, *, error: str | None = None) -> ChatSummary:
    return ChatSummary(chat_id, title, 0.0, updated, 2, Path(f"{chat_id}.jsonl"), error=error)


CHATS = [  # newest first, as SessionStore.list_chats returns them
    _chat("broken1", "broken1", 300.0, error="bad header"),
    _chat("c2", "Trip planning", 200.0),
    _chat("c1", "Grocery list", 100.0),
]


def test_last_is_the_newest_readable_chat() -> None:
    found = find_chat(CHATS, "last")
    assert found is not None and found.id == "c2"
    assert find_chat(CHATS, "LAST") == found
    assert find_chat([], "last") is None


def test_id_then_title_part() -> None:
    assert find_chat(CHATS, "c1") == CHATS[2]
    assert find_chat(CHATS, "grocery") == CHATS[2]
    assert find_chat(CHATS, "broken1") is None  # unreadable chats cannot be resumed
    assert find_chat(CHATS, "  ") is None
    assert find_chat(CHATS, "holiday") is None


def test_lines_show_id_date_count_and_title() -> None:
    lines = chat_lines(CHATS)
    assert lines[0] == "broken1  (unreadable: bad header)"
    assert lines[1].startswith("c2  ") and lines[1].endswith("2 messages  Trip planning")
    assert len(chat_lines(CHATS, 1)) == 1
