"""Branches: edit, regenerate, the < 1/2 > switcher, switching, and branch summaries."""

from __future__ import annotations

import pytest

from assistant.compaction.branch import BranchSummarizer
from assistant.compaction.tokens import CountingBackend
from assistant.conversation import Message, ToolCall
from assistant.sessions import (
    BRANCH_SUMMARY_PREFIX,
    ChatClosedError,
    ChatHandle,
    SessionStore,
    is_branch_summary,
)
from assistant.sessions.tree import ChatTree

from .chatdata import model_prompt_tokens


def _texts(chat: ChatHandle) -> list[str]:
    return [m.content for m in chat.conversation.messages]


def _label(chat: ChatHandle, message_id: str) -> str:
    """Where a message sits among its alternatives, as ``< 1/2 >`` shows it."""
    siblings = ChatTree(chat.entries).siblings(message_id)
    return f"{siblings.index(message_id) + 1}/{len(siblings)}"


def _switch(chat: ChatHandle, message_id: str, step: int, *, summarize: bool = True) -> None:
    chat.switch_to(chat.branch_target(message_id, step), summarize=summarize)


def _two_turns(chat: ChatHandle) -> tuple[Message, Message, Message, Message]:
    conv = chat.conversation
    u1 = conv.append(Message(role="user", content="Write a haiku about rain"))
    a1 = conv.append(Message(role="assistant", content="Rain on the window"))
    u2 = conv.append(Message(role="user", content="Now one about snow"))
    a2 = conv.append(Message(role="assistant", content="Snow without a sound"))
    return u1, a1, u2, a2


def test_regenerate_creates_a_sibling_and_switching_back_restores(store: SessionStore) -> None:
    chat = store.create()
    u1, a1, u2, a2 = _two_turns(chat)
    trimmed = chat.regenerate_from(a2.id)
    assert trimmed is chat.conversation
    assert _texts(chat) == [u1.content, a1.content, u2.content]
    new = chat.conversation.append(Message(role="assistant", content="White hush of snow"))
    assert _label(chat, new.id) == "2/2"
    assert _label(chat, a2.id) == "1/2"
    assert _label(chat, u1.id) == "1/1"

    _switch(chat, new.id, -1, summarize=False)
    assert _texts(chat) == [u1.content, a1.content, u2.content, a2.content]
    with pytest.raises(ValueError, match="no branch"):
        chat.branch_target(a2.id, -1)
    _switch(chat, a2.id, +1, summarize=False)
    assert _texts(chat)[-1] == "White hush of snow"

    # the active branch survives a reopen
    chat.close()
    with store.open(chat.chat_id) as again:
        assert _texts(again)[-1] == "White hush of snow"
        assert _label(again, again.conversation.messages[-1].id) == "2/2"


def test_edit_user_message_branches_from_its_parent(store: SessionStore) -> None:
    chat = store.create()
    u1, a1, u2, _ = _two_turns(chat)
    edited = chat.edit_user_message(u2.id, "Now one about hail")
    assert chat.conversation.messages[-1] is edited  # already appended, on disk
    assert _texts(chat) == [u1.content, a1.content, "Now one about hail"]
    assert _label(chat, edited.id) == "2/2"
    assert ChatTree(chat.entries).siblings(u2.id) == [u2.id, edited.id]
    chat.conversation.append(Message(role="assistant", content="Hail drums the roof"))
    # editing the very first message: siblings at the root
    first = chat.edit_user_message(u1.id, "Write a limerick")
    assert _texts(chat) == ["Write a limerick"]
    assert _label(chat, first.id) == "2/2"
    with pytest.raises(ValueError, match="user message"):
        chat.edit_user_message(a1.id, "nope")
    with pytest.raises(ValueError, match="assistant reply"):
        chat.regenerate_from(u1.id)
    with pytest.raises(KeyError):
        chat.branch_target("no-such-id", 1)


def test_switching_lands_where_the_branch_was_left(store: SessionStore) -> None:
    chat = store.create()
    u1, a1, u2, a2 = _two_turns(chat)
    alt = chat.edit_user_message(u1.id, "Write a haiku about sun")
    chat.conversation.append(Message(role="assistant", content="Sun on the meadow"))
    _switch(chat, alt.id, -1, summarize=False)
    assert _texts(chat) == [u1.content, a1.content, u2.content, a2.content]
    _switch(chat, u1.id, +1, summarize=False)
    assert _texts(chat) == ["Write a haiku about sun", "Sun on the meadow"]


def test_leaving_a_branch_attaches_a_summary_to_the_new_one(store: SessionStore) -> None:
    chat = store.create()
    u1, a1, u2, a2 = _two_turns(chat)
    conv = chat.conversation
    call = ToolCall(name="write_file", arguments={"path": "snow.txt", "content": "..."})
    conv.append(Message(role="assistant", tool_calls=[call]))
    conv.append(Message(role="tool", tool_call_id=call.id, name="write_file", content="ok"))
    alt = chat.edit_user_message(u2.id, "Now one about fog")
    conv.append(Message(role="assistant", content="Fog swallows the hill"))

    before_switch = [m.id for m in conv.messages]
    _switch(chat, alt.id, -1)  # back to the snow branch; the fog branch is summarized
    summary = conv.messages[-1]
    assert [m.id for m in conv.messages[:4]] == [u1.id, a1.id, u2.id, a2.id]
    assert summary.role == "user"
    assert summary.content.startswith(BRANCH_SUMMARY_PREFIX + "\n")
    assert is_branch_summary(summary) and chat.is_branch_summary(summary.id)
    assert "Now one about fog" in summary.content
    assert "Fog swallows the hill" in summary.content
    assert not chat.is_branch_summary(u1.id)
    assert alt.id in before_switch and alt.id not in [m.id for m in conv.messages]

    # it is part of what the model sees, and of the resumed chat
    tokens = model_prompt_tokens(conv)
    dump = conv.model_dump()
    chat.close()
    with store.open(chat.chat_id) as again:
        assert again.conversation.model_dump() == dump
        assert model_prompt_tokens(again.conversation) == tokens
        assert again.is_branch_summary(summary.id)
        # summaries are not alternatives in the switcher
        assert _label(again, u2.id) == "1/2"
        # new messages continue after the summary
        again.conversation.append(Message(role="user", content="And one about ice"))
        assert again.conversation.messages[-2].id == summary.id


def test_summary_of_files_touched_and_no_duplicate_summaries(store: SessionStore) -> None:
    chat = store.create()
    conv = chat.conversation
    u1 = conv.append(Message(role="user", content="Fix the bug in app.py"))
    call = ToolCall(name="read_file", arguments={"path": "app.py"})
    conv.append(Message(role="assistant", tool_calls=[call]))
    conv.append(Message(role="tool", tool_call_id=call.id, name="read_file", content="code"))
    edit = ToolCall(name="edit_file", arguments={"path": "app.py", "old": "a", "new": "b"})
    conv.append(Message(role="assistant", tool_calls=[edit]))
    conv.append(Message(role="tool", tool_call_id=edit.id, name="edit_file", content="ok"))
    alt = chat.edit_user_message(u1.id, "Explain app.py instead")
    conv.append(Message(role="assistant", content="It is a web app."))

    _switch(chat, alt.id, -1)  # leave "Explain", summarize it
    _switch(chat, u1.id, +1)  # leave "Fix the bug", summarize it
    text = conv.messages[-1].content
    assert "Fix the bug in app.py" in text
    # compaction's file tracking: a file that was read and then edited is listed as modified
    assert "## Files\nModified: app.py" in text and "Read: app.py" not in text
    entries_before = len(chat.entries)
    # switching back and forth without new activity reuses the summaries already made
    _switch(chat, alt.id, -1)
    _switch(chat, u1.id, +1)
    kinds = [e.type for e in chat.entries[entries_before:]]
    assert "branch_summary" not in kinds and kinds == ["checkout", "checkout"]
    assert sum(is_branch_summary(m) for m in conv.messages) == 1


def test_custom_summarizer_gets_the_abandoned_messages_and_the_budget() -> None:
    calls: list[tuple[list[str], int]] = []

    def summarizer(messages: list[Message], budget: int) -> str:
        calls.append(([m.content for m in messages], budget))
        return "MODEL SUMMARY"

    store = SessionStore(summarizer=summarizer, summary_budget=77)
    chat = store.create()
    u1, a1, u2, a2 = _two_turns(chat)
    chat.switch_to(u1.id)  # back before a1, as a regeneration goes: a1's branch is summarized
    assert calls == [([a1.content, u2.content, a2.content], 77)]
    assert chat.conversation.messages[-1].content == BRANCH_SUMMARY_PREFIX + "\nMODEL SUMMARY"
    reply = chat.conversation.append(Message(role="assistant", content="Drizzle"))
    # the summary sits between the question and the new reply, and the new reply is
    # still an alternative of the old one
    assert [m.content for m in chat.conversation.messages][:1] == [u1.content]
    assert _label(chat, reply.id) == "2/2"
    chat.switch_to(u1.id)  # leaving the new reply summarizes it
    assert calls[1] == (["Drizzle"], 77)
    entries = len(chat.entries)
    chat.switch_to(chat.leaf_id)  # already there: nothing written
    assert len(chat.entries) == entries
    # only a summary left behind: nothing to summarize, a checkout records the move
    chat.regenerate_from(reply.id)
    chat.switch_to(u1.id)
    assert len(calls) == 2
    assert chat.entries[-1].type == "checkout"
    assert [m.content for m in chat.conversation.messages] == [u1.content]
    chat.close()


def test_default_branch_summary_fits_its_budget_in_real_tokens() -> None:
    messages = [Message(role="user", content=f"request number {i} " * 5) for i in range(50)]
    messages.append(Message(role="assistant", content="final answer"))
    summarize = BranchSummarizer()
    count = CountingBackend().count
    for budget in (10, 50, 80, 120, 400, 512):
        text = summarize(messages, budget)
        assert count(text) <= budget, (budget, count(text))
        assert text.startswith("The user explored another branch")
    roomy = summarize(messages, 10_000)
    assert all(f"request number {i} " in roomy for i in range(50)) and "final answer" in roomy
    tight = summarize(messages, 120)
    # the last request verbatim, the goal (the first request), the older ones omitted
    assert ("request number 49 " * 5).strip() in tight
    assert "## Goal\nrequest number 0" in tight and "request number 25" not in tight
    assert summarize(messages, 120) == tight  # deterministic


def test_a_failed_edit_leaves_the_branch_as_it_was(store: SessionStore) -> None:
    chat = store.create()
    u1, a1, u2, a2 = _two_turns(chat)
    chat.close()
    with pytest.raises(ChatClosedError):
        chat.edit_user_message(u2.id, "never saved")
    assert [m.id for m in chat.conversation.messages] == [u1.id, a1.id, u2.id, a2.id]
    assert chat.leaf_id == a2.id
