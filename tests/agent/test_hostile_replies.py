"""Replies a model should not write but can: nested arguments and runaway braces end the
step with a clear tool error, and the reply is kept (issue 18, items 3 and 8)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from assistant.agent.events import TurnFinished

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
