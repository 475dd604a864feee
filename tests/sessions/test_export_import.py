"""Markdown and OpenAI-JSON export, and importing that JSON back."""

from __future__ import annotations

import json

import pytest

from assistant.conversation import Message, ToolCall
from assistant.sessions import ChatImportError, SessionStore

from .chatdata import fill_chat, model_prompt_tokens, raw_prompt_tokens


def _chat_with_everything(store: SessionStore) -> str:
    chat = store.create(title="Notes work")
    fill_chat(chat.conversation)
    u = chat.conversation.messages[-2]
    chat.edit_user_message(u.id, "Actually, one more thing")
    chat.conversation.append(Message(role="assistant", content="Sure."))
    chat.switch_branch(chat.conversation.messages[-2].id, -1)  # leaves a branch summary
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


def test_export_import_round_trip(store: SessionStore) -> None:
    chat_id = _chat_with_everything(store)
    exported = store.export_openai_json(chat_id)
    with store.open(chat_id) as original:
        conv = original.conversation
        tokens, raw = model_prompt_tokens(conv), raw_prompt_tokens(conv)
        originals = [m.content for m in original.compacted_originals(conv.compactions[0].id)]

    new_id = store.import_openai_json(exported)
    assert new_id != chat_id
    assert store.export_openai_json(new_id) == exported
    with store.open(new_id) as imported:
        conv2 = imported.conversation
        assert imported.title == "Notes work"
        assert model_prompt_tokens(conv2) == tokens
        assert raw_prompt_tokens(conv2) == raw
        assert imported.is_branch_summary(conv2.messages[-1].id)
        kept = [m.content for m in imported.compacted_originals(conv2.compactions[0].id)]
        assert kept == originals
        for a, b in zip(conv.messages, conv2.messages, strict=True):
            assert a.model_dump(exclude={"id"}) == b.model_dump(exclude={"id"})


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


def test_import_plain_openai_messages_and_reject_bad_files(store: SessionStore) -> None:
    call = ToolCall(name="grep", arguments={"pattern": "x"})
    plain = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "find x"}]},
        Message(role="assistant", tool_calls=[call]).to_openai(),
        {"role": "tool", "tool_call_id": call.id, "content": "x at 3"},
        {"role": "assistant", "content": "Line 3."},
    ]
    chat_id = store.import_openai_json(json.dumps({"messages": plain}))
    with store.open(chat_id) as chat:
        got = [m.to_openai(as_model_sees=False) for m in chat.conversation.messages]
        assert got[1] == {"role": "user", "content": "find x"}
        assert got[2:] == plain[2:]
        assert chat.title == "find x"
    assert store.import_openai_json(plain)  # a bare list works too

    before = {r.id for r in store.list_chats()}
    bad = [
        "not json",
        "42",
        '{"nothing": []}',
        '{"messages": [{"role": "wizard"}]}',
        '{"messages": [{"role": "tool", "content": "no id"}]}',
        '{"messages": [], "annotations": [{"type": "pruned", "message_indices": [5]}]}',
        '{"messages": [{"role":"user","content":"a"}], "annotations": [{"type": "message_meta",'
        ' "message_index": 0, "timestamp": "yesterday"}]}',
        '{"format": "offline-assistant.chat", "version": 99, "messages": []}',
    ]
    for text in bad:
        with pytest.raises(ChatImportError):
            store.import_openai_json(text)
    assert {r.id for r in store.list_chats()} == before  # no half-imported chats left


def test_import_refuses_runaway_nesting_and_keeps_deep_arguments_as_text(
    store: SessionStore,
) -> None:
    deep = '{"messages": [' + "[" * 5000 + "]" * 5000 + "]}"
    with pytest.raises(ChatImportError, match="nested more than 64 levels deep"):
        store.import_openai_json(deep)
    args = '{"a": ' * 300 + "1" + "}" * 300
    messages = [
        {"role": "user", "content": "write it"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "function": {"name": "write_file", "arguments": args}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "refused"},
        {"role": "assistant", "content": "Done."},
    ]
    chat_id = store.import_openai_json(json.dumps(messages))
    with store.open(chat_id) as chat:
        call = chat.conversation.messages[1].tool_calls[0]
        assert call.arguments == {} and call.raw_arguments == args  # kept as written
        assert [m.content for m in chat.conversation.messages][-1] == "Done."
        chat.export_markdown()
