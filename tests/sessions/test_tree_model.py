"""Random edit/regenerate/switch/prune/compact sequences: a reopened chat is always
exactly the conversation that was live, and the switcher is consistent."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.conversation import CompactionRecord, Message, ToolCall
from assistant.sessions import ChatHandle, SessionStore
from assistant.sessions.tree import ChatTree

from .chatdata import model_prompt_tokens

op = st.one_of(
    st.tuples(st.just("user"), st.text(max_size=12)),
    st.tuples(st.just("assistant"), st.text(max_size=12)),
    st.tuples(st.just("tool"), st.integers(0, 9)),
    st.tuples(st.just("prune"), st.integers(0, 99)),
    st.tuples(st.just("compact"), st.integers(0, 99)),
    st.tuples(st.just("edit"), st.integers(0, 99)),
    st.tuples(st.just("regen"), st.integers(0, 99)),
    st.tuples(st.just("switch"), st.integers(0, 99), st.sampled_from([-1, 1]), st.booleans()),
    st.tuples(st.just("reopen")),
)


def _pick(items: list[Message], k: int) -> Message | None:
    return items[k % len(items)] if items else None


def _apply(chat: ChatHandle, step: tuple[object, ...]) -> None:
    conv = chat.conversation
    plain = [m for m in conv.messages if not chat.is_branch_summary(m.id)]
    kind = step[0]
    if kind == "user":
        conv.append(Message(role="user", content=str(step[1])))
    elif kind == "assistant":
        conv.append(Message(role="assistant", content=str(step[1])))
    elif kind == "tool":
        call = ToolCall(name="read_file", arguments={"path": f"f{step[1]}.txt"})
        conv.append(Message(role="assistant", tool_calls=[call]))
        conv.append(Message(role="tool", tool_call_id=call.id, content="data " * 20))
    elif kind == "prune":
        tool = _pick([m for m in conv.messages if m.role == "tool"], int(str(step[1])))
        if tool is not None:
            conv.mark_pruned([tool.id], 5)
    elif kind == "compact":
        kept = _pick(conv.messages, int(str(step[1])))
        if kept is not None:
            conv.add_compaction(
                CompactionRecord(
                    summary=f"summary {len(conv.compactions)}",
                    first_kept_id=kept.id,
                    tokens_before=10,
                    tokens_after=5,
                    reason="manual",
                    count=len(conv.compactions) + 1,
                )
            )
    elif kind == "edit":
        target = _pick([m for m in plain if m.role == "user"], int(str(step[1])))
        if target is not None:
            chat.edit_user_message(target.id, "edited")
    elif kind == "regen":
        target = _pick([m for m in plain if m.role == "assistant"], int(str(step[1])))
        if target is not None:
            chat.regenerate_from(target.id)
    elif kind == "switch":
        target = _pick(plain, int(str(step[1])))
        if target is not None:
            try:
                landing = chat.branch_target(target.id, int(str(step[2])))
            except ValueError:  # no branch that way: stay
                landing = chat.leaf_id
            chat.switch_to(landing, summarize=bool(step[3]))


@settings(max_examples=40, deadline=None)
@given(st.lists(op, max_size=25))
def test_random_histories_reopen_identically(steps: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp))
        chat = store.create()
        try:
            for step in steps:
                if step[0] == "reopen":
                    chat.close()
                    chat = store.open(chat.chat_id)
                    continue
                _apply(chat, step)
                tree = ChatTree(chat.entries)
                for msg in chat.conversation.messages:
                    if not chat.is_branch_summary(msg.id):
                        assert msg.id in tree.siblings(msg.id)
            live = chat.conversation.model_dump()
            tokens = model_prompt_tokens(chat.conversation)
            leaf = chat.leaf_id
            chat.close()
            with store.open(chat.chat_id) as again:
                assert again.leaf_id == leaf
                assert again.conversation.model_dump() == live
                assert model_prompt_tokens(again.conversation) == tokens
                rows = store.list_chats()
                assert rows[0].message_count == len(again.conversation.messages)
        finally:
            store.close_all()
