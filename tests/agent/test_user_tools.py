"""User-started tools (/read, /ls, /find, /grep, !cmd, dropped files) and app commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from assistant.agent.events import MessageAdded, Notice, ToolCallStarted, TurnFinished
from assistant.config import Settings
from tests.fakes.approval import DenyingApprover

from .conftest import Harness

Make = Callable[..., Harness]


def test_read_enters_history_like_a_model_call_without_a_model_reply(
    harness: Make, workspace: Path
) -> None:
    (workspace / "plan.md").write_text("Step 1: coffee\n", encoding="utf-8")
    h = harness()
    assert h.say("/read plan.md") is None
    assert not h.backend.calls
    assert h.roles() == ["assistant", "tool"]
    call_msg, result = h.conv.messages
    assert call_msg.initiated_by == "user" and result.initiated_by == "user"
    assert call_msg.tool_calls[0].name == "read_file"
    assert call_msg.tool_calls[0].arguments == {"path": "plan.md"}
    assert result.tool_call_id == call_msg.tool_calls[0].id
    assert "Step 1: coffee" in result.content
    assert h.events.of(ToolCallStarted)[0].initiated_by == "user"
    assert len(h.events.of(MessageAdded)) == 2
    assert h.events.of(TurnFinished) == [TurnFinished()]


def test_the_next_message_sees_the_user_tool_result(harness: Make, workspace: Path) -> None:
    (workspace / "plan.md").write_text("Step 1: coffee\n", encoding="utf-8")
    h = harness("Coffee first.")
    h.say("/read plan.md")
    h.say("What is step 1?")
    prompt = h.backend.calls[0].prompt_text
    # An earlier turn: the user's read is noted as theirs, its output whole.
    assert "[At your request I ran read_file path=plan.md]" in prompt
    assert "[Output of read_file path=plan.md]\nplan.md (1 lines)\nStep 1: coffee" in prompt
    assert h.roles() == ["assistant", "tool", "user", "assistant"]


def test_read_with_range(harness: Make, workspace: Path) -> None:
    (workspace / "n.txt").write_text("".join(f"{i}\n" for i in range(1, 21)), encoding="utf-8")
    h = harness()
    h.say("/read n.txt 5-7")
    assert h.conv.messages[0].tool_calls[0].arguments == {
        "path": "n.txt",
        "start_line": 5,
        "end_line": 7,
    }
    assert h.conv.messages[1].content.splitlines()[1:4] == ["5", "6", "7"]


def test_ls_find_grep(harness: Make, workspace: Path) -> None:
    (workspace / "docs").mkdir()
    (workspace / "docs" / "a.md").write_text("alpha beta\n", encoding="utf-8")
    h = harness()
    h.say("/ls")
    h.say("/find *.md")
    h.say("/grep beta docs")
    names = [m.tool_calls[0].name for m in h.conv.messages if m.tool_calls]
    assert names == ["list_dir", "find_files", "grep"]
    results = [m.content for m in h.conv.messages if m.role == "tool"]
    assert "docs/" in results[0]
    assert results[1] == "docs/a.md"
    assert results[2] == "docs/a.md:1: alpha beta"
    assert not h.backend.calls


def test_bang_command_runs_without_asking(harness: Make, workspace: Path) -> None:
    h = harness(approver=DenyingApprover())
    h.say("!echo made > made.txt")
    assert (workspace / "made.txt").exists()
    assert h.conv.messages[1].content.endswith("[exit code 0]")


def test_failed_user_tool_is_still_recorded(harness: Make) -> None:
    h = harness()
    h.say("/read missing.txt")
    assert h.roles() == ["assistant", "tool"]
    assert h.conv.messages[1].is_error


def test_dropped_file_from_outside_is_copied_then_read(
    harness: Make, tmp_path: Path, workspace: Path
) -> None:
    src = tmp_path / "elsewhere" / "letter.txt"
    src.parent.mkdir()
    src.write_text("Dear team,\n", encoding="utf-8")
    h = harness()
    msg = h.agent.drop_file(h.conv, src)
    assert msg is not None and "Dear team" in msg.content
    assert (workspace / "dropped" / "letter.txt").exists()
    assert h.conv.messages[0].tool_calls[0].arguments == {"path": "dropped/letter.txt"}
    assert any("Copied letter.txt" in n.text for n in h.events.of(Notice))


def test_dropped_folder_is_refused(harness: Make, tmp_path: Path) -> None:
    h = harness()
    assert h.agent.drop_file(h.conv, tmp_path) is None
    assert h.conv.messages == []
    assert h.events.of(TurnFinished)[0].error is not None


def test_escaped_slash_is_chat(harness: Make, settings: Settings) -> None:
    h = harness("ok")
    h.say("//read is a command")
    assert h.conv.messages[0].content == "/read is a command"
