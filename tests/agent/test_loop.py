"""The turn loop with the scripted backend: tool calls, errors, limits, stop, approval."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from assistant.agent.events import (
    AssistantDelta,
    ContextUsage,
    MessageAdded,
    ModelCallFinished,
    Notice,
    ToolCallStarted,
    TurnFinished,
)
from assistant.agent.tool_steps import CANCELLED_RESULT
from assistant.config import Settings
from assistant.conversation import Conversation
from assistant.llm.base import CancelToken
from assistant.tools.approval import ApprovalDecision
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness, ScriptedApprover, call_block

Make = Callable[..., Harness]


def _assert_consistent(h: Harness) -> None:
    """Every tool call has exactly one result, right after its assistant message."""
    msgs = h.conv.messages
    for i, msg in enumerate(msgs):
        if msg.tool_calls:
            results = msgs[i + 1 : i + 1 + len(msg.tool_calls)]
            assert [r.role for r in results] == ["tool"] * len(msg.tool_calls)
            assert [r.tool_call_id for r in results] == [c.id for c in msg.tool_calls]


def test_plain_reply_events_and_request(harness: Make) -> None:
    h = harness("Hello there!")
    assert h.say("Hi") is None
    assert h.roles() == ["user", "assistant"]
    assert h.conv.messages[1].content == "Hello there!"
    kinds = h.events.kinds()
    assert kinds[0] == "MessageAdded" and kinds[1] == "ContextUsage"
    assert kinds[-3:] == ["ModelCallFinished", "MessageAdded", "TurnFinished"]
    assert "".join(e.text for e in h.events.of(AssistantDelta)) == "Hello there!"
    usage = h.events.of(ContextUsage)[0]
    call = h.backend.calls[0]
    assert usage.prompt_tokens == call.prompt_tokens
    assert sum(usage.segments.values()) == usage.prompt_tokens
    assert usage.segments["tools"] > 0 and usage.segments["system"] > 0
    policy = h.settings.effective_policy(h.backend.info.trained_context)
    assert usage.reserve == policy.reserve
    assert call.max_tokens == min(h.settings.sampling.max_reply_tokens, policy.reserve)
    assert call.tools is not None and len(call.tools) == 7
    assert h.events.of(TurnFinished) == [TurnFinished(stopped=False, error=None)]


def test_message_is_persisted_before_it_is_shown(harness: Make) -> None:
    h = harness("Reply.")
    order: list[str] = []

    class Observer:
        def message_appended(self, message: object) -> None:
            order.append("saved")

        def messages_pruned(self, ids: list[str], freed: int) -> None: ...

        def compaction_added(self, record: object) -> None: ...

    h.conv.subscribe(Observer())
    h.events.hooks.append(lambda e: order.append("shown") if isinstance(e, MessageAdded) else None)
    h.say("Hi")
    assert order == ["saved", "shown", "saved", "shown"]


def test_failing_save_is_reported_not_shown(harness: Make) -> None:
    h = harness("Reply.")

    class Broken:
        def message_appended(self, message: object) -> None:
            raise OSError("disk full")

        def messages_pruned(self, ids: list[str], freed: int) -> None: ...

        def compaction_added(self, record: object) -> None: ...

    h.conv.subscribe(Broken())
    h.say("Hi")
    assert h.conv.messages == []
    assert not h.events.of(MessageAdded)
    assert "disk full" in h.events.of(Notice)[0].text
    assert h.events.of(TurnFinished)[0].error is not None
    assert not h.backend.calls


def test_model_reads_a_file_then_answers(harness: Make, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("The code word is PELICAN.\n", encoding="utf-8")
    h = harness(
        "Let me look.\n" + call_block("read_file", path="notes.txt"),
        "The code word is PELICAN.",
    )
    h.say("What is the code word in notes.txt?")
    assert h.roles() == ["user", "assistant", "tool", "assistant"]
    asked = h.conv.messages[1]
    assert asked.content == "Let me look."
    assert asked.tool_calls[0].name == "read_file"
    assert asked.tool_calls[0].arguments == {"path": "notes.txt"}
    result = h.conv.messages[2]
    assert not result.is_error and "PELICAN" in result.content
    assert result.initiated_by == "model" and result.name == "read_file"
    assert h.events.of(ToolCallStarted)[0].call == asked.tool_calls[0]
    # The second model call saw the result (text protocol on the ChatML fallback).
    assert len(h.backend.calls) == 2
    assert "[Tool result: read_file]" in h.backend.calls[1].prompt_text
    assert "PELICAN" in h.backend.calls[1].prompt_text
    # ContextUsage before every model call.
    assert len(h.events.of(ContextUsage)) == 2
    assert len(h.events.of(ModelCallFinished)) == 2
    _assert_consistent(h)


def test_alias_argument_is_stored_as_path(harness: Make, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n", encoding="utf-8")
    h = harness('{"name": "read_file", "arguments": {"file_path": "a.txt"}}', "Done.")
    h.say("read a.txt")
    assert h.conv.messages[1].tool_calls[0].arguments == {"path": "a.txt"}
    assert not h.conv.messages[2].is_error


def test_malformed_call_gets_an_error_with_the_format(harness: Make) -> None:
    h = harness('```tool_call\n{"name": "read_file", "arguments": {path: a.txt}}\n```', "Sorry.")
    h.say("read it")
    assert h.roles() == ["user", "assistant", "tool", "assistant"]
    result = h.conv.messages[2]
    assert result.is_error
    assert "could not be used" in result.content and "```tool_call" in result.content
    assert h.conv.messages[1].tool_calls[0].name == "read_file"
    assert h.conv.messages[1].tool_calls[0].raw_arguments is not None
    _assert_consistent(h)


def test_unknown_tool_gets_an_error(harness: Make) -> None:
    h = harness(call_block("launch_rockets", count=3), "OK, I cannot.")
    h.say("launch")
    result = h.conv.messages[2]
    assert result.is_error and "no tool named 'launch_rockets'" in result.content
    assert h.conv.messages[-1].content == "OK, I cannot."


def test_step_limit_ends_with_a_notice(harness: Make, settings: Settings) -> None:
    settings.step_limit = 3
    # Each call is new (a repeat would end the turn sooner: test_progress_guard.py).
    h = harness(*[call_block("find_files", pattern=f"*.{i}") for i in range(10)])
    h.say("loop forever")
    assert len(h.backend.calls) == 3
    assert h.roles() == ["user"] + ["assistant", "tool"] * 3
    notices = [n for n in h.events.of(Notice) if n.level == "warning"]
    assert notices and "step limit" in notices[0].text
    assert h.events.of(TurnFinished)[-1] == TurnFinished(stopped=False, error=None)
    _assert_consistent(h)


def test_two_calls_in_one_reply_run_in_order(harness: Make, workspace: Path) -> None:
    (workspace / "a.txt").write_text("A\n", encoding="utf-8")
    (workspace / "b.txt").write_text("B\n", encoding="utf-8")
    h = harness(
        call_block("read_file", path="a.txt") + "\n" + call_block("read_file", path="b.txt"),
        "Both read.",
    )
    h.say("read both")
    assert h.roles() == ["user", "assistant", "tool", "tool", "assistant"]
    assert [m.content.splitlines()[-1] for m in h.conv.messages[2:4]] == ["A", "B"]
    _assert_consistent(h)


def test_stop_mid_stream_keeps_the_partial_reply(settings: Settings) -> None:
    backend = ScriptedBackend(["one two three four five six seven eight nine ten"])
    backend.delay_per_token = 0.001
    h = Harness(settings, backend=backend)
    token = CancelToken()

    def stop_after_three(event: object) -> None:
        if isinstance(event, AssistantDelta) and len(h.events.of(AssistantDelta)) == 3:
            token.cancel()

    h.events.hooks.append(stop_after_three)
    h.say("count", token)
    assert h.roles() == ["user", "assistant"]
    reply = h.conv.messages[1]
    assert reply.stopped
    assert reply.content == "one two three "
    assert h.events.of(TurnFinished) == [TurnFinished(stopped=True, error=None)]


def test_stop_mid_stream_does_not_run_a_half_written_call(settings: Settings) -> None:
    h = Harness(settings, [call_block("run_command", command="echo hi")])
    token = CancelToken()
    h.events.hooks.append(lambda e: token.cancel() if isinstance(e, AssistantDelta) else None)
    h.say("go", token)
    assert h.roles() == ["user", "assistant"]
    assert h.conv.messages[1].stopped and not h.conv.messages[1].tool_calls
    assert not h.events.of(ToolCallStarted)


def test_stop_mid_tool_cancels_the_rest(settings: Settings, workspace: Path) -> None:
    settings.tool_approval = "auto"
    h = Harness(
        settings,
        [
            call_block("run_command", command="echo begun; sleep 30")
            + "\n"
            + call_block("write_file", path="later.txt", content="x"),
            "never used",
        ],
    )
    token = CancelToken()
    timers: list[threading.Timer] = []

    def stop_soon(event: object) -> None:
        if isinstance(event, ToolCallStarted):
            timer = threading.Timer(0.3, token.cancel)
            timers.append(timer)
            timer.start()

    h.events.hooks.append(stop_soon)
    h.say("run it", token)
    for timer in timers:
        timer.join()
    assert h.roles() == ["user", "assistant", "tool", "tool"]
    first, second = h.conv.messages[2:4]
    assert first.is_error and "cancelled" in first.content
    assert second.is_error and second.content == CANCELLED_RESULT
    assert not (workspace / "later.txt").exists()
    assert len(h.backend.calls) == 1
    assert h.events.of(TurnFinished) == [TurnFinished(stopped=True, error=None)]
    _assert_consistent(h)


def test_denied_write_is_an_error_result(harness: Make, workspace: Path) -> None:
    approver = ScriptedApprover(ApprovalDecision.DENY)
    h = harness(
        call_block("write_file", path="x.txt", content="data"), "Understood.", approver=approver
    )
    h.say("write x")
    assert not (workspace / "x.txt").exists()
    result = h.conv.messages[2]
    assert result.is_error and "denied" in result.content
    assert len(approver.asked) == 1
    request = approver.asked[0]
    assert request.tool == "write_file" and "x.txt" in request.summary
    assert request.preview == "data"
    assert h.conv.messages[-1].content == "Understood."


def test_allow_for_chat_is_asked_once_per_chat(harness: Make, workspace: Path) -> None:
    approver = ScriptedApprover(ApprovalDecision.ALLOW_FOR_CHAT)
    h = harness(
        call_block("write_file", path="a.txt", content="1"),
        call_block("write_file", path="b.txt", content="2"),
        "Done.",
        approver=approver,
    )
    h.say("write two files")
    assert (workspace / "a.txt").exists() and (workspace / "b.txt").exists()
    assert len(approver.asked) == 1
    # A different conversation object starts with no standing approvals.
    h.backend.enqueue(call_block("write_file", path="c.txt", content="3"), "ok")
    h.agent.chat(Conversation(), "again")
    assert len(approver.asked) == 2
    assert not (workspace / "c.txt").exists()


def test_no_approver_denies_and_auto_allows(
    harness: Make, settings: Settings, workspace: Path
) -> None:
    h = harness(call_block("run_command", command="echo hi > out.txt"), "no")
    h.say("run")
    assert h.conv.messages[2].is_error and not (workspace / "out.txt").exists()
    settings.tool_approval = "auto"
    h.backend.enqueue(call_block("run_command", command="echo hi > out.txt"), "yes")
    h.say("run again")
    assert (workspace / "out.txt").read_text(encoding="utf-8").strip() == "hi"


def test_read_only_tools_are_not_asked(harness: Make, workspace: Path) -> None:
    approver = ScriptedApprover()
    (workspace / "a.txt").write_text("A", encoding="utf-8")
    h = harness(call_block("read_file", path="a.txt"), "done", approver=approver)
    h.say("read")
    assert not approver.asked and not h.conv.messages[2].is_error


def test_empty_reply_gives_a_notice(harness: Make) -> None:
    h = harness("")
    h.say("hello?")
    assert h.roles() == ["user"]
    assert any("without writing an answer" in n.text for n in h.events.of(Notice))


def test_sandbox_refusal_reaches_the_model(harness: Make) -> None:
    h = harness(call_block("read_file", path="/etc/passwd"), "I can't.")
    h.say("read passwd")
    result = h.conv.messages[2]
    assert result.is_error and "outside the workspace" in result.content
    assert "root:" not in result.content


def test_native_template_gets_tools_and_tag_calls_parse(
    settings: Settings, workspace: Path
) -> None:
    template = (
        "{% if tools %}TOOLS:{{ tools | tojson }}\n{% endif %}"
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}"
        "{% if m.tool_calls %}{{ m.tool_calls | tojson }}{% endif %}\n{% endfor %}<assistant>"
    )
    backend = ScriptedBackend(
        ['<tool_call>{"name": "list_dir", "arguments": "{}"}</tool_call>', "Empty folder."],
        template_source=template,
    )
    assert backend.info.supports_native_tools
    h = Harness(settings, backend=backend)
    h.say("what is there?")
    assert h.roles() == ["user", "assistant", "tool", "assistant"]
    assert "TOOLS:" in backend.calls[0].prompt_text
    assert h.conv.messages[2].content.endswith("is empty.")


def test_repeated_failing_calls_stop_before_the_step_limit(harness: Make) -> None:
    bad = '```tool_call\n{"name": "read_file", "arguments": {path: a.txt}}\n```'
    h = harness(bad, call_block("launch_rockets"), bad, bad, "never reached")
    h.say("read it")
    # Two rounds whose calls all failed, then the loop gives up (limit is 8).
    assert len(h.backend.calls) == 2
    assert h.roles() == ["user", "assistant", "tool", "assistant", "tool"]
    warnings = [n.text for n in h.events.of(Notice) if n.level == "warning"]
    assert any("tool calls all failed" in w for w in warnings)
    _assert_consistent(h)


def test_a_successful_call_resets_the_failure_count(harness: Make, workspace: Path) -> None:
    (workspace / "a.txt").write_text("A\n", encoding="utf-8")
    bad = call_block("launch_rockets")
    h = harness(bad, call_block("read_file", path="a.txt"), bad, "Done.")
    h.say("go")
    assert len(h.backend.calls) == 4
    assert h.conv.messages[-1].content == "Done."


def test_respond_answers_the_conversation_as_it_stands(harness: Make) -> None:
    h = harness("First.", "Again.")
    h.say("hello")
    # As after "regenerate": drop the reply and answer the same user message again.
    conv = Conversation(messages=h.conv.messages[:1])
    h.agent.respond(conv)
    assert [m.content for m in conv.messages] == ["hello", "Again."]
    assert h.events.of(TurnFinished)[-1] == TurnFinished(stopped=False, error=None)
