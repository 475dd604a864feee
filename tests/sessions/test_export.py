"""Markdown and OpenAI-JSON export."""

from __future__ import annotations

import json

from assistant.conversation import Message
from assistant.sessions import SessionStore

from .chatdata import fill_chat


def _chat_with_everything(store: SessionStore) -> str:
    chat = store.create(title="Notes work")
    fill_chat(chat.conversation)
    u = chat.conversation.messages[-2]
    chat.edit_user_message(u.id, "Actually, one more thing")
    chat.conversation.append(Message(role="assistant", content="Sure."))
    other = chat.branch_target(chat.conversation.messages[-2].id, -1)
    chat.switch_to(other)  # leaves a branch summary
    chat.close()
    return chat.chat_id


def test_openai_json_shape(store: SessionStore) -> None:
    chat_id = _chat_with_everything(store)
    doc = json.loads(store.export_openai_json(chat_id))
    assert doc["format"] == "offline-assistant.chat" and doc["title"] == "Notes work"
    messages = doc["messages"]
    assert messages[0] == {"role": "user", "content": "Please read notes.txt and summarize it."}
    call = messages[1]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "read_file"
    assert json.loads(call["function"]["arguments"]) == {"path": "notes.txt"}
    assert messages[2]["role"] == "tool" and messages[2]["tool_call_id"] == call["id"]
    assert messages[2]["content"].startswith("line one")  # full content, even though pruned
    kinds = [a["type"] for a in doc["annotations"]]
    assert {"compaction", "pruned", "branch_summary", "message_meta"} <= set(kinds)
    comp = next(a for a in doc["annotations"] if a["type"] == "compaction")
    assert comp["summary"].startswith("## Goal")
    assert comp["first_kept_index"] == 7 and comp["after_message"] == 8
    assert next(a for a in doc["annotations"] if a["type"] == "pruned")["message_indices"] == [2]


def test_markdown_is_readable(store: SessionStore) -> None:
    chat_id = _chat_with_everything(store)
    md = store.export_markdown(chat_id)
    assert md.startswith("# Notes work\n")
    assert "### User · " in md and "### Assistant · " in md
    assert "**Tool call** `read_file`" in md and '{"path": "notes.txt"}' in md
    assert "### Tool result: read_file" in md
    assert "*Cleared from the model's context to save room.*" in md
    assert "> **Note: compaction 1** (threshold, 900 → 200 tokens)" in md
    assert "> ## Goal" in md
    assert "> **Note: summary of an abandoned branch**" in md
    assert "*Stopped by the user.*" in md
    # a fence longer than any backtick run in the content keeps the block intact
    assert "````\nline one\nline two ```code```" in md
    # the note comes right before the first kept message
    note = md.index("Note: compaction 1")
    assert md.index("summary.md written") > note > md.index("### Tool result: write_file")
