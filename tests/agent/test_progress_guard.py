"""A turn that goes round in circles ends with a note: a repeated call is not run again, and
two rounds in a row without progress end the turn before the step limit."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assistant.agent.events import Notice, ToolCallStarted
from assistant.agent.progress_guard import (
    ANSWER_FROM_RESULTS,
    REPEAT_RESULT,
    ProgressGuard,
    call_signature,
)
from assistant.conversation import ToolCall
from assistant.tools.approval import ApprovalDecision
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness, ScriptedApprover, call_block

Make = Callable[..., Harness]

#: A template with native tool calls whose results are wrapped as Qwen2.5's are.
QWEN_LIKE = (Path(__file__).parents[1] / "data" / "chatml_tools.jinja").read_text()


def qwen_like(*replies: str, template: str = QWEN_LIKE) -> ScriptedBackend:
    return ScriptedBackend(list(replies), template_source=template)


def native_call(name: str, **arguments: Any) -> str:
    """A call as Qwen2.5-Coder writes it."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_the_same_call_again_is_answered_without_running_it(
    harness: Make, workspace: Path
) -> None:
    """The model reads a file, then asks for it again: the repeat is not run; the model is
    asked once more, for the answer in so many words, and its answer is what the user gets
    (the request is in that prompt only, not in the chat)."""
    (workspace / "notes.txt").write_text("Meeting: Thursday 14:30\n", encoding="utf-8")
    read = call_block("read_file", path="notes.txt")
    h = harness(read, read, "The meeting is on Thursday at 14:30.")
    h.say("when is the meeting?")
    assert h.roles() == ["user", "assistant", "tool", "assistant"]
    assert "Thursday 14:30" in h.conv.messages[2].content
    assert h.conv.messages[-1].content == "The meeting is on Thursday at 14:30."
    assert len(h.events.of(ToolCallStarted)) == 1
    # The answer's prompt is the last one and the request, so its cached prefix is kept.
    before, answer = h.backend.calls[1].prompt_text, h.backend.calls[2].prompt_text
    assert ANSWER_FROM_RESULTS in answer and ANSWER_FROM_RESULTS not in before
    assert answer.startswith(before.rsplit("Meeting: Thursday 14:30", 1)[0])
    assert all(ANSWER_FROM_RESULTS not in m.content for m in h.conv.messages)
    assert not [n for n in h.events.of(Notice) if n.level == "warning"]


def test_a_repeat_beside_a_new_call_is_answered_and_the_new_one_runs(
    harness: Make, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("A\n", encoding="utf-8")
    (workspace / "b.txt").write_text("B\n", encoding="utf-8")
    read_a = call_block("read_file", path="a.txt")
    both = read_a + "\n" + call_block("read_file", path="b.txt")
    h = harness(read_a, both, "A and B.")
    h.say("read both")
    tools = [m.content for m in h.conv.messages if m.role == "tool"]
    assert tools[1] == REPEAT_RESULT and "B" in tools[2]
    assert h.conv.messages[-1].content == "A and B."


def test_a_repeated_write_runs_once(harness: Make, workspace: Path) -> None:
    """A write asked for twice with the same text is approved and done once."""
    write = call_block("write_file", path="hello.txt", content="hello world")
    approver = ScriptedApprover(ApprovalDecision.ALLOW_ONCE, ApprovalDecision.ALLOW_ONCE)
    h = harness(write, write, "Saved.", approver=approver)
    h.say("save hello world to hello.txt")
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "hello world"
    assert len(approver.asked) == 1
    assert h.conv.messages[-1].content == "Saved."


def test_repeating_calls_end_the_turn_with_a_plain_note(harness: Make, workspace: Path) -> None:
    """Asked for the answer, the model writes the call again and nothing else: it is not
    run, and the turn ends with a note saying what to do."""
    (workspace / "a.txt").write_text("A\n", encoding="utf-8")
    read = call_block("read_file", path="a.txt")
    h = harness(read, read, read, "never reached")
    h.say("read a.txt")
    assert len(h.backend.calls) == 3
    assert len(h.events.of(ToolCallStarted)) == 1  # read once; the repeats were not run
    assert h.roles() == ["user", "assistant", "tool"]
    warnings = [n.text for n in h.events.of(Notice) if n.level == "warning"]
    assert len(warnings) == 1
    assert "same read_file call" in warnings[0] and "/read" in warnings[0]


def test_failed_rounds_still_stop(harness: Make) -> None:
    h = harness(call_block("launch_rockets"), call_block("launch_rockets", at="moon"), "x")
    h.say("go")
    assert len(h.backend.calls) == 2
    warnings = [n.text for n in h.events.of(Notice) if n.level == "warning"]
    assert any("tool calls all failed" in w for w in warnings)


def test_progress_resets_the_count() -> None:
    guard = ProgressGuard()
    a = ToolCall(name="read_file", arguments={"path": "a"})
    b = ToolCall(name="read_file", arguments={"path": "b"})
    guard.record_round([a], [True])
    guard.record_round([a], [False])
    assert guard.idle_rounds == 1 and not guard.should_stop
    guard.record_round([b], [True])
    assert guard.idle_rounds == 0
    guard.record_round([a], [False])
    guard.record_round([b], [False])
    assert guard.should_stop and guard.last_reason == "repeat"


def test_signature_ignores_key_order() -> None:
    one = ToolCall(name="grep", arguments={"pattern": "x", "path": "."})
    two = ToolCall(name="grep", arguments={"path": ".", "pattern": "x"})
    assert call_signature(one) == call_signature(two)
    assert call_signature(one) != call_signature(ToolCall(name="grep", arguments={"pattern": "y"}))


def test_a_reply_that_only_echoes_a_tool_result_is_asked_for_the_answer(
    harness: Make, workspace: Path
) -> None:
    """Qwen2.5-Coder 1.5B wrote "<tool_response> Created hello.txt ..." as its answer: the
    user gets the answer it gives when asked for one in words, not the echo."""
    write = native_call("write_file", path="hello.txt", content="hello world")
    echo = "<tool_response>\nCreated hello.txt (1 lines, 11 characters).\n</tool_response>"
    approver = ScriptedApprover(ApprovalDecision.ALLOW_ONCE)
    h = harness(approver=approver, backend=qwen_like(write, echo, "I created hello.txt."))
    h.say("save hello world to hello.txt")
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "hello world"
    assert ANSWER_FROM_RESULTS in h.backend.calls[-1].prompt_text
    assert h.conv.messages[-1].content == "I created hello.txt."
    assert all("<tool_response>" not in m.content for m in h.conv.messages)


def test_an_echo_asked_for_the_answer_twice_ends_with_a_plain_note(
    harness: Make, workspace: Path
) -> None:
    write = native_call("write_file", path="hello.txt", content="hello world")
    echo = "<tool_response>\nCreated hello.txt (1 lines, 11 characters).\n</tool_response>"
    h = harness(approver=ScriptedApprover(ApprovalDecision.ALLOW_ONCE),
                backend=qwen_like(write, echo, echo))
    h.say("save hello world to hello.txt")
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "hello world"
    assert h.conv.messages[-1].role == "tool"
    warnings = [n.text for n in h.events.of(Notice) if n.level == "warning"]
    assert warnings == ["Stopped: the assistant did not answer in words. What it found is "
                        "shown above. Ask again in other words, use /read FILE to show it a "
                        "file yourself, or pick a larger model in Models."]


def test_an_echo_is_known_by_the_tag_of_the_model_s_own_template(
    harness: Make, workspace: Path
) -> None:
    """A template that opens results with "[TOOL_RESULTS]": a reply starting with that is
    an echo, asked for the answer; one starting with Qwen's tag is an answer like any other
    (the tag is the template's, found by rendering a result)."""
    tagged = QWEN_LIKE.replace("'<|im_start|>user\\n<tool_response>\\n' + message.content + "
                               "'\\n</tool_response>", "'<|im_start|>user\\n[TOOL_RESULTS] ' + "
                               "message.content + ' [/TOOL_RESULTS]")
    assert tagged != QWEN_LIKE
    (workspace / "a.txt").write_text("A\n", encoding="utf-8")
    read = native_call("read_file", path="a.txt")
    h = harness(backend=qwen_like(read, "[TOOL_RESULTS] a.txt (1 lines) A [/TOOL_RESULTS]",
                                  "a.txt holds A.", template=tagged))
    h.say("what is in a.txt?")
    assert ANSWER_FROM_RESULTS in h.backend.calls[-1].prompt_text
    assert h.conv.messages[-1].content == "a.txt holds A."
    h = harness(backend=qwen_like(read, "<tool_response> is what I saw: A", template=tagged))
    h.say("what is in a.txt?")
    assert len(h.backend.calls) == 2
    assert h.conv.messages[-1].content == "<tool_response> is what I saw: A"
