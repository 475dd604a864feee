"""Looking behind a compaction: its originals stay in the file."""

from __future__ import annotations

from assistant.conversation import CompactionRecord, Message
from assistant.sessions import SessionStore


def _record(first_kept: str, count: int, summary: str) -> CompactionRecord:
    return CompactionRecord(
        summary=summary,
        first_kept_id=first_kept,
        tokens_before=1000,
        tokens_after=300,
        reason="threshold",
        count=count,
    )


def test_originals_stay_behind_each_compaction(store: SessionStore) -> None:
    chat = store.create()
    conv = chat.conversation
    msgs = [
        conv.append(Message(role="user" if i % 2 == 0 else "assistant", content=f"turn {i}"))
        for i in range(6)
    ]
    first = _record(msgs[2].id, 1, "summary one")
    conv.add_compaction(first)
    more = [conv.append(Message(role="user", content=f"later {i}")) for i in range(2)]
    second = _record(msgs[4].id, 2, "summary two")
    conv.add_compaction(second)
    assert [m.id for m in conv.kept_messages()] == [msgs[4].id, msgs[5].id] + [m.id for m in more]

    originals = ["turn 0", "turn 1", "turn 2", "turn 3", "turn 4", "turn 5", "later 0", "later 1"]
    assert [m.content for m in conv.messages] == originals

    dump = conv.model_dump()
    chat.close()

    with store.open(chat.chat_id) as again:
        assert again.conversation.model_dump() == dump
        assert [m.content for m in again.conversation.messages] == originals
        assert [m.id for m in again.conversation.kept_messages()] == [
            msgs[4].id, msgs[5].id, *(m.id for m in more)
        ]
