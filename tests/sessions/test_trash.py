"""Delete moves a chat to the trash; undo and restore bring it back intact."""

from __future__ import annotations

import pytest

from assistant.conversation import Message
from assistant.sessions import ChatNotFoundError, SessionStore


def _trashed(store: SessionStore) -> list[str]:
    return [p.stem for p in store.trash_dir.glob("*.jsonl")]


def test_delete_undo_and_restore(store: SessionStore) -> None:
    ids = []
    for text in ("first", "second"):
        with store.create() as chat:
            chat.conversation.append(Message(role="user", content=text))
            ids.append(chat.chat_id)
    original = store.path_of(ids[0]).read_bytes()

    store.delete(ids[0])
    assert [r.id for r in store.list_chats()] == [ids[1]]
    assert _trashed(store) == [ids[0]]
    assert (store.trash_dir / f"{ids[0]}.jsonl").read_bytes() == original
    with pytest.raises(ChatNotFoundError):
        store.open(ids[0])

    assert store.undo_delete() == ids[0]
    assert store.path_of(ids[0]).read_bytes() == original
    assert _trashed(store) == []
    assert store.undo_delete() is None

    store.delete(ids[0])
    store.delete(ids[1])
    assert store.undo_delete() == ids[1]  # newest deletion first
    # a later session restores from the trash folder by id
    later = SessionStore(store.root)
    assert later.undo_delete() is None
    later.restore(ids[0])
    with later.open(ids[0]) as chat:
        assert chat.conversation.messages[0].content == "first"
    with pytest.raises(ChatNotFoundError, match="trash"):
        later.restore(ids[0])
    assert sorted(r.id for r in store.list_chats()) == sorted(ids)
