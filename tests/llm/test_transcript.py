"""The transcript form a base model is shown (assistant/llm/transcript.py): what it renders,
what the automatic choice picks, and how the stop and trimming of its reply work."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.llm.llama_backend import _find_stop, _partial_stop_len
from assistant.llm.toolcall import parse_tool_calls
from assistant.llm.transcript import (
    TRANSCRIPT_ORIGIN,
    TRANSCRIPT_STOPS,
    WORKED_EXAMPLES,
    TranscriptTemplate,
    choose_form,
    examples_at,
)

from .test_template import TOOLS

EXAMPLES = "".join(f"User: {said}\n\nAssistant: {answer}\n\n" for said, answer in WORKED_EXAMPLES)


def test_the_chat_is_a_transcript_ending_where_the_assistant_answers() -> None:
    t = TranscriptTemplate(bos_token="<bos>")
    msgs = [
        {"role": "system", "content": "Be brief.\n\nSummary of the earlier chat: port 4406."},
        {"role": "user", "content": "Our budget is 61700 euros."},
        {"role": "assistant", "content": "Noted.\n"},
        {"role": "user", "content": "What is the budget?"},
    ]
    assert t.render(msgs) == (
        "<bos>Be brief.\n\nSummary of the earlier chat: port 4406.\n\n"
        "User: Our budget is 61700 euros.\n\nAssistant: Noted.\n\n"
        + EXAMPLES
        + "User: What is the budget?\n\nAssistant:"
    )
    assert t.origin == TRANSCRIPT_ORIGIN and t.stops == TRANSCRIPT_STOPS
    assert t.supports_system and not t.strict_alternation and not t.native_tools
    # Without the generation prompt (what a summary's prefix check renders).
    assert t.render(msgs, add_generation_prompt=False).endswith("User: What is the budget?\n\n")


#: The user asks for a file; the model calls read_file; the result comes back.
READ_ROUND: list[dict[str, Any]] = [
    {"role": "user", "content": "read a.txt"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "hello"},
]


def test_the_examples_stay_before_the_users_latest_message_across_tool_rounds() -> None:
    t = TranscriptTemplate()
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello."},
        *READ_ROUND,
    ]
    out = t.render(msgs, TOOLS)
    before, _, after = out.partition(EXAMPLES)
    assert before.endswith("User: hi\n\nAssistant: Hello.\n\n")
    assert after.startswith("User: read a.txt\n\nAssistant: ```tool_call\n")
    assert after.endswith("User: [Tool result: read_file]\nhello\n\nAssistant:")
    assert examples_at([{"role": "system", "content": "S"}]) == 1
    assert examples_at([]) == 0


def test_without_a_system_message_the_examples_come_first() -> None:
    out = TranscriptTemplate().render([{"role": "user", "content": "hi"}])
    assert out == EXAMPLES + "User: hi\n\nAssistant:"


def test_tools_use_the_text_protocol_in_the_transcript() -> None:
    t = TranscriptTemplate()
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        *READ_ROUND,
    ]
    out = t.render(msgs, TOOLS)
    head, _, rest = out.partition(EXAMPLES)
    assert head.startswith("Be brief.") and "read_file(path: string, start?: integer)" in head
    assert "Assistant: ```tool_call\n" in rest
    assert "User: [Tool result: read_file]\nhello\n\nAssistant:" in rest
    # The call written back is one the parser reads again.
    call_line = rest.split("Assistant: ", 1)[1].split("\n\nUser:", 1)[0]
    assert [c.call.name for c in parse_tool_calls(call_line).calls] == ["read_file"]


def test_a_reply_stops_at_the_models_next_user_line() -> None:
    reply = "4406.\n\nUser: And the budget?\n\nAssistant: 61700."
    hit = _find_stop(reply, TRANSCRIPT_STOPS)
    assert hit is not None and reply[:hit].rstrip() == "4406."
    # A line end is held back while it may start "User:", and let through after.
    assert _partial_stop_len("4406.\n", TRANSCRIPT_STOPS) == 1
    assert _partial_stop_len("4406.\nU", TRANSCRIPT_STOPS) == 2
    assert _find_stop("Ask the user: is 4406 right?", TRANSCRIPT_STOPS) is None


@pytest.mark.parametrize(
    ("tuned", "meta", "filename", "form"),
    [
        (True, {}, "x.gguf", "chat"),  # the registry's word wins
        (False, {"tokenizer.chat_template": "{{ x }}"}, "x.gguf", "transcript"),
        (None, {}, "mystery.gguf", "transcript"),  # no chat template in the file
        (None, {"tokenizer.chat_template": "t", "general.name": "Gemma 3 270m"},
         "gemma-3-270m-q4_k_m.gguf", "chat"),  # nothing says base: its template is used
        (None, {"tokenizer.chat_template": "t", "general.name": "Qwen2.5 0.5B Base"},
         "qwen.gguf", "transcript"),
        (None, {"tokenizer.chat_template": "t"}, "gemma-3-1b-pt-Q4_K_M.gguf", "transcript"),
        (None, {"tokenizer.chat_template": "t"}, "gemma-3-1b-it-Q4_K_M.gguf", "chat"),
        (None, {"tokenizer.chat_template": "t", "general.name": "Llama base",
                "general.finetune": "Instruct"}, "l.gguf", "chat"),
        (None, {"tokenizer.chat_template": "t"}, "database-helper.gguf", "chat"),
    ],
)
def test_the_automatic_form(
    tuned: bool | None, meta: dict[str, str], filename: str, form: str
) -> None:
    got, why = choose_form(tuned, meta, filename)
    assert got == form and why
