"""Token accounting: exact segments through the template, memoized."""

from __future__ import annotations

from typing import Any

from assistant.compaction.context import summary_message, system_message
from assistant.compaction.tokens import CountingBackend, TokenCounter, truncate_to_tokens
from assistant.conversation import Conversation, Message, ToolCall
from tests.fakes.scripted import ScriptedBackend

from .helpers import SYSTEM, tool_turn

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                         "required": ["path"]}}}]


class CountingScripted(ScriptedBackend):
    def __post_init__(self) -> None:
        super().__post_init__()
        self.prompt_counts = 0

    def count_prompt(self, messages: Any, tools: Any = None) -> int:
        self.prompt_counts += 1
        return super().count_prompt(messages, tools)


def _conv() -> Conversation:
    conv = Conversation()
    for i in range(3):
        tool_turn(conv, i, size=5)
    conv.append(Message(role="user", content="ünïcode and emoji 🎉 and\nnewlines\n\n"))
    conv.append(Message(role="assistant", content="stopped here", stopped=True))
    conv.messages[2].pruned = True
    return conv


def test_segments_sum_exactly_to_the_full_count_chatml() -> None:
    be = ScriptedBackend()
    counter = TokenCounter(be)
    conv = _conv()
    for tools in (None, TOOLS):
        msgs = [system_message(SYSTEM), summary_message("## Goal\nx"), *conv.messages]
        exact = be.count_prompt([m.to_openai() for m in msgs], tools)
        estimate = counter.overhead(SYSTEM, tools) + sum(counter.message(m) for m in msgs[1:])
        assert estimate == exact


def test_tool_call_arguments_are_counted() -> None:
    counter = TokenCounter(ScriptedBackend())
    short = Message(role="assistant", tool_calls=[ToolCall(id="c", name="read_file",
                                                           arguments={"path": "a"})])
    long = Message(role="assistant", tool_calls=[ToolCall(id="c", name="read_file",
                                                          arguments={"path": "a/" * 50})])
    assert counter.message(long) > counter.message(short) + 40


def test_pruned_message_counts_the_placeholder() -> None:
    counter = TokenCounter(ScriptedBackend())
    msg = Message(role="tool", tool_call_id="c", name="read_file", content="word " * 300)
    full = counter.message(msg)
    assert counter.as_pruned(msg) < 40 < full
    msg.pruned = True
    assert counter.message(msg) == counter.as_pruned(msg)
    assert counter.unpruned(msg) == full


def test_counts_are_memoized_per_message() -> None:
    be = CountingScripted()
    counter = TokenCounter(be)
    conv = _conv()
    for m in conv.messages:
        counter.message(m)
    before = be.prompt_counts
    for m in conv.messages:
        counter.message(m)
    assert be.prompt_counts == before
    conv.append(Message(role="user", content="new"))
    for m in conv.messages:
        counter.message(m)
    assert be.prompt_counts == before + 1  # only the new message costs work


def test_memo_key_follows_pruned_flag_and_content() -> None:
    counter = TokenCounter(ScriptedBackend())
    msg = Message(role="tool", tool_call_id="c", content="alpha " * 100)
    full = counter.message(msg)
    msg.pruned = True
    assert counter.message(msg) < full
    msg.pruned = False
    msg.content = "alpha " * 10
    assert counter.message(msg) < full


def test_counting_backend_matches_scripted_backend() -> None:
    conv = _conv()
    msgs = [m.to_openai() for m in [system_message(SYSTEM), *conv.messages]]
    assert CountingBackend().count_prompt(msgs, TOOLS) == ScriptedBackend().count_prompt(
        msgs, TOOLS
    )


def test_fallback_is_a_real_tokenizer_not_chars_over_four() -> None:
    be = CountingBackend()
    assert be.count("a" * 400) != 100
    assert be.count("hello world") == 2


def test_truncate_to_tokens_boundaries() -> None:
    be = CountingBackend()
    text = "one two three four five six seven eight nine ten"
    assert truncate_to_tokens(text, be.count(text), be.count) == text
    cut = truncate_to_tokens(text, be.count(text) - 1, be.count)
    assert cut != text and cut.endswith("[...truncated]")
    assert be.count(cut) <= be.count(text) - 1
    assert truncate_to_tokens(text, 0, be.count) == ""
