"""Messages as the model sees them (issue 28): content too long to show whole is cut by
characters with a note on what was left out, lone surrogates never reach an encoder, and a
call that could not be understood is shown as a short string."""

from __future__ import annotations

import json

import pytest

from assistant.conversation import (
    MAX_SHOWN_CHARS,
    RAW_ARGUMENTS_SHOWN,
    Message,
    ToolCall,
    cut_for_model,
    valid_text,
)
from assistant.llm.template import ChatTemplate


def _lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


def test_short_content_is_shown_as_is() -> None:
    text = _lines(100)
    assert Message(role="user", content=text).model_view_content() is text


def test_long_content_keeps_head_and_tail_around_a_note() -> None:
    text = _lines(200_000)
    msg = Message(role="user", content=text)
    shown = msg.model_view_content()
    assert len(shown) <= MAX_SHOWN_CHARS + 400
    assert shown.startswith("line 1\nline 2\n")
    assert shown.endswith("line 199999\nline 200000\n")
    head, rest = shown.split("[... ", 1)
    first_omitted = int(head.rstrip("\n").rsplit("\n", 1)[1].split()[1]) + 1
    assert f"lines {first_omitted:,}-" in rest
    assert "kept in the chat" in rest
    assert msg.content == text  # the message itself is whole


def test_the_note_says_how_to_get_the_rest_of_a_tool_output() -> None:
    shown = cut_for_model("x" * 300_000, "tool")
    assert "read_file with start_line and end_line" in shown
    assert "(of 300,000)" in shown  # one long line: no line numbers to give


def test_the_cut_is_the_same_every_time() -> None:
    text = _lines(50_000)
    assert cut_for_model(text, "user") == cut_for_model(text + "", "user")


@pytest.mark.parametrize(
    ("text", "clean"),
    [("plain", "plain"), ("é\ud800x", "é\ufffdx"), ("\udcff", "\ufffd"), ("\x00", "\x00")],
)
def test_lone_surrogates_are_kept_in_the_chat_and_replaced_for_the_model(
    text: str, clean: str
) -> None:
    assert valid_text(text) == clean
    msg = Message(role="assistant", content=text)
    assert msg.content == text  # kept as written (exports escape them)
    assert msg.model_view_content() == clean
    call = ToolCall(name="f", raw_arguments=text)
    shown = Message(role="assistant", content=text, tool_calls=[call]).to_openai()
    prompt = ChatTemplate(None).render([shown])
    prompt.encode("utf-8")  # what a tokenizer is given always encodes


def test_a_call_not_understood_is_shown_as_a_short_string() -> None:
    raw = "[" * 100_000
    msg = Message(role="assistant", tool_calls=[ToolCall(name="f", raw_arguments=raw)])
    shown = msg.to_openai()["tool_calls"][0]["function"]["arguments"]
    text = json.loads(shown)
    assert isinstance(text, str) and text.startswith("[" * RAW_ARGUMENTS_SHOWN)
    assert "98,000 more characters" in text
    exported = msg.to_openai(as_model_sees=False)["tool_calls"][0]["function"]["arguments"]
    assert exported == raw  # exports keep what was written


def test_argument_keys_with_lone_surrogates_survive_a_save(tmp_path: object) -> None:
    """Found by the fuzz: the chat file's writer mangled such keys (three U+FFFD for one
    surrogate), so a reopened chat differed; they are made encodable when the call is."""
    from assistant.sessions import SessionStore

    call = ToolCall(name="write_file", arguments={"\ud800path": {"x\udcff": [{"\ud800": 1}]}})
    assert call.arguments == {"\ufffdpath": {"x\ufffd": [{"\ufffd": 1}]}}
    store = SessionStore()
    with store.create() as chat:
        chat.conversation.append(Message(role="assistant", tool_calls=[call]))
        chat_id = chat.chat_id
    with store.open(chat_id) as chat:
        assert chat.conversation.messages[0].tool_calls[0].arguments == call.arguments
    store.close_all()
