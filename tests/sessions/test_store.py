"""The file format, append-only writing, the chat list and resuming a chat exactly."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import pytest

from assistant import paths
from assistant.conversation import CompactionRecord, Conversation, Message
from assistant.sessions import (
    SCHEMA_VERSION,
    ChatClosedError,
    ChatNotFoundError,
    SessionStore,
)

from .chatdata import fill_chat, model_prompt_tokens, raw_prompt_tokens


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_one_jsonl_file_per_chat_with_header_and_entries(store: SessionStore) -> None:
    with store.create(title="Planning") as chat:
        fill_chat(chat.conversation)
        chat.record_setting("mode", "standard")
        path = chat.path
    assert path.parent == paths.sessions_dir()
    assert path.name == f"{chat.chat_id}.jsonl"
    header, *entries = _lines(path)
    assert header["type"] == "header"
    assert header["schema_version"] == SCHEMA_VERSION
    assert header["chat_id"] == chat.chat_id
    assert header["title"] == "Planning"
    assert isinstance(header["created"], float)
    for entry in entries:
        assert list(entry)[:4] == ["id", "parent_id", "timestamp", "type"]
    kinds = [e["type"] for e in entries]
    assert kinds.count("message") == 10
    assert kinds.count("prune") == 1 and kinds.count("compaction") == 1
    assert kinds[-1] == "setting"
    # a chain: every entry hangs under the one before it
    for prev, entry in itertools.pairwise(entries):
        assert entry["parent_id"] == prev["id"]


def test_pruning_and_compaction_only_append(store: SessionStore) -> None:
    chat = store.create()
    conv = chat.conversation
    conv.append(Message(role="user", content="hi"))
    tool = conv.append(Message(role="tool", tool_call_id="c1", content="big output"))
    before = chat.path.read_bytes()
    conv.mark_pruned([tool.id], 10)
    fill_chat(conv)
    after = chat.path.read_bytes()
    assert after.startswith(before)
    stored = [e for e in _lines(chat.path)[1:] if e["type"] == "message"]
    assert stored[1]["message"]["content"] == "big output"  # type: ignore[index]
    assert stored[1]["message"]["pruned"] is False  # type: ignore[index]


def test_written_before_applied_and_failure_aborts(store: SessionStore) -> None:
    chat = store.create()
    conv = chat.conversation
    seen: list[int] = []

    class Probe:
        def message_appended(self, message: Message) -> None:
            seen.append(len(_lines(chat.path)))

        def messages_pruned(self, message_ids: list[str], tokens_freed: int) -> None: ...

        def compaction_added(self, record: CompactionRecord) -> None: ...

    conv.subscribe(Probe())
    conv.append(Message(role="user", content="one"))
    assert seen == [2]  # header + the entry were on disk when the next observer ran
    first = conv.messages[0]
    with pytest.raises(ValueError, match="already used"):
        conv.append(Message(id=first.id, role="user", content="duplicate id"))
    assert len(conv.messages) == 1
    chat.close()
    with pytest.raises(ChatClosedError):
        conv.append(Message(role="user", content="after close"))
    assert len(conv.messages) == 1
    assert len(_lines(chat.path)) == 2


def test_resume_rebuilds_the_identical_conversation_and_prompt(store: SessionStore) -> None:
    chat = store.create()
    fill_chat(chat.conversation)
    live = chat.conversation
    live_dump = live.model_dump()
    live_raw = raw_prompt_tokens(live)
    live_model = model_prompt_tokens(live)
    chat.close()

    again = store.open(chat.chat_id)
    resumed = again.conversation
    assert resumed.model_dump() == live_dump
    assert raw_prompt_tokens(resumed) == live_raw
    assert model_prompt_tokens(resumed) == live_model
    assert any(m.pruned for m in resumed.messages)
    assert resumed.last_compaction is not None
    # the prompt really differs from the unpruned, uncompacted one (the test can fail)
    plain = Conversation(messages=[m.model_copy(update={"pruned": False}) for m in live.messages])
    assert model_prompt_tokens(plain) != live_model
    # and the resumed conversation keeps writing to the same file
    resumed.append(Message(role="user", content="continue"))
    again.close()
    with store.open(chat.chat_id) as third:
        assert third.conversation.messages[-1].content == "continue"
        assert len(third.conversation.messages) == len(live_dump["messages"]) + 1


def test_list_newest_first_title_from_first_user_message_and_rename(
    store: SessionStore,
) -> None:
    assert store.list_chats() == []
    with store.create() as older:
        older.conversation.append(Message(role="user", content="  How do I\nbake bread?  "))
        older.conversation.append(Message(role="assistant", content="Flour, water, salt."))
    time.sleep(0.01)
    with store.create() as newer:
        newer.conversation.append(Message(role="user", content="x" * 200))
    time.sleep(0.01)
    with store.create() as empty:
        pass
    rows = store.list_chats()
    assert [r.id for r in rows] == [empty.chat_id, newer.chat_id, older.chat_id]
    assert rows[0].title == "New chat" and rows[0].message_count == 0
    assert rows[1].title.endswith("…") and len(rows[1].title) <= 60
    assert rows[2].title == "How do I bake bread?"
    assert rows[2].message_count == 2
    assert all(r.error is None for r in rows)

    store.rename(older.chat_id, "Bread")
    assert store.list_chats()[0].title == "Bread"  # renaming is an update: now newest
    with store.open(older.chat_id) as chat:
        assert chat.title == "Bread"
        chat.rename("Sourdough")  # through an open handle too
        assert store.list_chats()[0].title == "Sourdough"
        store.rename(older.chat_id, "Rye")  # the store uses the open handle
        assert chat.title == "Rye"
    with pytest.raises(ValueError):
        store.rename(older.chat_id, "   ")


def test_settings_are_recorded_per_chat(store: SessionStore) -> None:
    with store.create() as chat:
        chat.record_setting("mode", "standard")
        chat.record_setting("mode", "local")
        chat.record_setting("temperature", 0.7)
        with pytest.raises(ValueError):
            chat.record_setting("bad", float("nan"))
    with store.open(chat.chat_id) as chat:
        assert chat.settings == {"mode": "local", "temperature": 0.7}


def test_unknown_and_bad_ids(store: SessionStore) -> None:
    with pytest.raises(ChatNotFoundError, match="No chat"):
        store.open("does-not-exist")
    with pytest.raises(ChatNotFoundError):
        store.open("../../etc/passwd")
    assert isinstance(SessionStore(Path("/nonexistent/x")).list_chats(), list)
