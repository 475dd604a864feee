"""Deleting a message makes a new branch without it; the old branch stays (issue 26)."""

from __future__ import annotations

import pytest

from assistant.conversation import Message, ToolCall
from assistant.sessions import SessionStore
from assistant.sessions.tree import ChatTree


def _texts(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


def test_deleting_a_message_branches_and_keeps_the_old_branch(store: SessionStore) -> None:
    chat = store.create()
    conv = chat.conversation
    u1 = conv.append(Message(role="user", content="first question"))
    a1 = conv.append(Message(role="assistant", content="first answer"))
    conv.append(Message(role="user", content="second question"))
    conv.append(Message(role="assistant", content="second answer"))
    chat.delete_message(a1.id)
    assert _texts(conv.messages) == ["first question", "second question", "second answer"]
    copied = conv.messages[1]
    siblings = ChatTree(chat.entries).siblings(copied.id)
    assert (siblings.index(copied.id) + 1, len(siblings)) == (2, 2)  # the old branch is 1
    old = chat.conversation_at(chat.branch_target(copied.id, -1))
    assert _texts(old.messages) == [
        "first question", "first answer", "second question", "second answer"
    ]
    # reopened from the file: the chat is on the new branch
    chat_id = chat.chat_id
    chat.close()
    again = store.open(chat_id)
    assert _texts(again.conversation.messages) == _texts(conv.messages)
    assert again.conversation.messages[0].id == u1.id
    again.close()


def test_deleting_a_reply_deletes_its_tool_results_and_not_a_result_alone(
    store: SessionStore,
) -> None:
    chat = store.create()
    conv = chat.conversation
    conv.append(Message(role="user", content="list it"))
    call = ToolCall(name="list_dir", arguments={"path": "."})
    reply = conv.append(Message(role="assistant", content="", tool_calls=[call]))
    result = conv.append(Message(role="tool", tool_call_id=call.id, name="list_dir",
                                 content="a.txt"))
    conv.append(Message(role="assistant", content="There is a.txt."))
    with pytest.raises(ValueError, match="tool result"):
        chat.delete_message(result.id)
    chat.delete_message(reply.id)
    assert [m.role for m in conv.messages] == ["user", "assistant"]
    assert conv.messages[-1].content == "There is a.txt."


def test_deleting_the_last_message_moves_back_and_is_remembered(store: SessionStore) -> None:
    chat = store.create()
    conv = chat.conversation
    conv.append(Message(role="user", content="q"))
    last = conv.append(Message(role="assistant", content="a"))
    chat.delete_message(last.id)
    assert _texts(conv.messages) == ["q"]
    chat_id = chat.chat_id
    chat.close()
    again = store.open(chat_id)
    assert _texts(again.conversation.messages) == ["q"]
    again.close()
