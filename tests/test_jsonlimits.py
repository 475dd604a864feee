"""The one bounded JSON loader: size and depth refused with a clear ValueError, never a
RecursionError (issue 28 item 1)."""

from __future__ import annotations

import json

import pytest

from assistant import jsonlimits
from assistant.conversation import Message


@pytest.mark.parametrize("depth", [17, 1_000, 100_000])
def test_deep_text_is_refused_with_the_limit_named(depth: int) -> None:
    text = '{"a": ' * depth + "1" + "}" * depth
    with pytest.raises(jsonlimits.TooDeepError, match="nested more than 16 levels deep"):
        jsonlimits.loads(text, "arguments", jsonlimits.MAX_ARGUMENT_DEPTH)


def test_long_text_is_refused_before_it_is_read() -> None:
    text = json.dumps({"a": "x" * 100})
    with pytest.raises(jsonlimits.TooLargeError, match="longer than 50 characters"):
        jsonlimits.loads(text, "arguments", max_chars=50)
    assert jsonlimits.loads(text, "arguments", max_chars=len(text)) == {"a": "x" * 100}


@pytest.mark.parametrize("text", ['{"a": 1', "\x00", '{"a": "\\ud800"', b'{"a": "\xff"}'])
def test_malformed_text_is_a_value_error(text: str | bytes) -> None:
    with pytest.raises(ValueError):
        jsonlimits.loads(text, "the line")


@pytest.mark.parametrize(
    ("arguments", "raw"),
    [
        ('{"path": "a"}', False),
        ("[" * 30_000 + "]" * 30_000, True),
        ('{"a": ' * 20 + "1" + "}" * 20, True),
        ("not json", True),
        ({"path": "a"}, False),
        ({"a": {"b": {"c": [[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}}}, True),
    ],
)
def test_imported_tool_calls_keep_bad_arguments_as_text(arguments: object, raw: bool) -> None:
    msg = Message.from_openai(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": arguments}}],
        }
    )
    call = msg.tool_calls[0]
    assert (call.raw_arguments is not None) == raw
    if raw:
        assert call.arguments == {}
        shown = msg.to_openai()["tool_calls"][0]["function"]["arguments"]
        assert isinstance(json.loads(shown), str)  # the model is shown text, not structure


def test_an_imported_value_deeper_than_a_document_may_be_is_refused() -> None:
    value: object = 1
    for _ in range(2_000):
        value = [value]
    with pytest.raises(ValueError, match="nested more than 64 levels deep"):
        Message.from_openai(
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": value}}],
            }
        )
