"""Replies a model should not write but can: nested arguments and runaway braces end the
step with a clear tool error, and the reply is kept (issue 18, items 3 and 8; issue 28
item 1: thousands of levels, and chats that already hold such a call)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from assistant.agent.events import TurnFinished
from assistant.conversation import RAW_ARGUMENTS_SHOWN, Message, ToolCall
from assistant.jsonlimits import MAX_ARGUMENT_CHARS
from assistant.llm.toolcall import MAX_SCAN

from .conftest import Harness

Make = Callable[..., Harness]


@pytest.mark.parametrize("depth", [300, 600])
def test_deeply_nested_arguments_get_an_error_result(harness: Make, depth: int) -> None:
    args = '{"a": ' * depth + "1" + "}" * depth
    reply = '```tool_call\n{"name": "write_file", "arguments": ' + args + "}\n```"
    h = harness(reply, "I could not write it.")
    h.say("Write the file.")
    assert h.roles() == ["user", "assistant", "tool", "assistant"]
    tool = h.conv.messages[2]
    assert tool.is_error
    assert "nested more than 16 levels deep" in tool.content
    assert h.conv.messages[1].tool_calls[0].raw_arguments is not None
    assert h.events.of(TurnFinished)[-1].error is None
    # The whole conversation can be serialized (this raised before).
    h.conv.model_dump_json()


def test_a_reply_of_braces_is_prose(harness: Make) -> None:
    h = harness("{" * 200_000)
    h.say("Go.")
    assert h.roles() == ["user", "assistant"]
    assert h.conv.messages[1].content == "{" * 200_000


def _deep_call(depth: int, *, as_string: bool = False) -> str:
    """A write_file call whose arguments hold ``depth`` nested arrays (brackets are cheap
    in tokens, so the reply fits the reply limit whole)."""
    args = '{"path": "a.txt", "content": ' + "[" * depth + "]" * depth + "}"
    value = json.dumps(args) if as_string else args
    return '```tool_call\n{"name": "write_file", "arguments": ' + value + "}\n```"


@pytest.mark.parametrize(("depth", "as_string"), [(5_000, False), (20_000, False), (5_000, True)])
def test_arguments_thousands_deep_fail_that_call_only(
    harness: Make, depth: int, as_string: bool
) -> None:
    """Issue 28 item 1: this raised RecursionError at every later render, for good."""
    h = harness(_deep_call(depth, as_string=as_string), "I could not write it.", "Hello again.")
    h.say("Write the file.")
    assert h.roles() == ["user", "assistant", "tool", "assistant"]
    tool = h.conv.messages[2]
    assert tool.is_error
    assert "nested more than 16 levels deep" in tool.content
    assert h.conv.messages[1].tool_calls[0].raw_arguments is not None
    # Within the turn, the stored call is rendered again: the model sees it as a short string.
    shown = h.backend.calls[-1].messages[2]["tool_calls"][0]["function"]["arguments"]
    assert isinstance(json.loads(shown), str)
    assert len(shown) < 3 * RAW_ARGUMENTS_SHOWN
    # In the next turn it is an earlier turn's call, written as a note without the arguments.
    h.say("Say hello.")
    assert h.roles()[-2:] == ["user", "assistant"]
    assert h.conv.messages[-1].content == "Hello again."
    assert h.backend.calls[-1].messages[2] == {"role": "assistant", "content": "[I ran write_file]"}
    assert h.events.of(TurnFinished)[-1].error is None
    h.conv.model_dump_json()


def test_arguments_too_long_are_a_clear_error(harness: Make) -> None:
    text = json.dumps({"path": "a.txt", "content": "x" * (MAX_ARGUMENT_CHARS + 10)})
    assert len(text) < MAX_SCAN  # within what the parser reads: refused for its size
    reply = '<function=write_file>' + text + "</function>"
    h = harness(reply, "Too long, sorry.", backend=None)
    h.backend.window = 200_000
    h.say("Write it.")
    tool = h.conv.messages[2]
    assert tool.is_error
    assert f"longer than {MAX_ARGUMENT_CHARS:,} characters" in tool.content


def test_a_chat_file_holding_a_deep_call_opens_and_continues(
    harness: Make, tmp_path: Path
) -> None:
    """A chat written before the fix (the raw text of a 50,000-deep call stored as is)."""
    from assistant.sessions import SessionStore

    store = SessionStore()
    raw = '{"name": "write_file", "arguments": ' + "[" * 50_000 + "]" * 50_000 + "}"
    with store.create() as chat:
        chat.conversation.append(Message(role="user", content="Write it."))
        call = ToolCall(name="write_file", raw_arguments=raw)
        chat.conversation.append(Message(role="assistant", tool_calls=[call]))
        chat.conversation.append(
            Message(
                role="tool", tool_call_id=call.id, name="write_file", content="bad", is_error=True
            )
        )
        chat_id = chat.chat_id
    with store.open(chat_id) as chat:
        assert chat.conversation.messages[1].tool_calls[0].raw_arguments == raw
        h = harness("Still here.")
        h.conv = chat.conversation
        h.say("Are you there?")
        assert chat.conversation.messages[-1].content == "Still here."
    with store.open(chat_id) as chat:  # and what the turn appended is on disk
        assert [m.role for m in chat.conversation.messages][-2:] == ["user", "assistant"]
        assert chat.conversation.messages[1].tool_calls[0].raw_arguments == raw
    store.close_all()


def test_an_unclosed_string_of_escaped_quotes_is_read_once() -> None:
    """Found by the fuzz: a call whose arguments string never closes and whose text ends
    in a backslash made every escaped quote inside it start a match of the rest that then
    failed (quadratic: a 200,000-character reply took minutes). A string token now always
    runs to its quote or the end."""
    from assistant.llm.toolcall import _TOKEN, parse_tool_calls

    inner = '{\\"a\\": ' * 30_000
    reply = 'Sure. {"name": "find_files", "arguments": "' + inner + "{\\"
    assert reply.endswith("\\")
    token = _TOKEN.match(reply, reply.index('"{'))
    assert token is not None and token.end() == len(reply)
    assert parse_tool_calls(reply).calls == []  # never closes: prose
