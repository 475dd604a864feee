"""A newcomer's file tasks in the real window with the model the first run gives (issue 45):
read a file and answer; write a new file after the approval dialog. Bounded work: two short
tasks with the 1.5B model (a minute or two on 2 cores)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from assistant.config import Settings
from assistant.llm.registry import load_registry
from assistant.llm.worker import default_factory

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_first_run_model_reads_a_file_and_writes_one_after_approval(
    make_window, tmp_path: Path, artifacts_dir: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(
        "Team notes\n\nThe weekly planning meeting is on Thursday at 14:30 in room B12.\n",
        encoding="utf-8")
    first_run = load_registry().default
    settings = Settings(model=first_run, workspace=str(workspace))
    settings.sampling.max_reply_tokens = 120
    settings.sampling.temperature = 0.0
    h = make_window(settings=settings, factory=default_factory, wait=False)
    h.wait_ready(timeout=300_000)

    h.type_and_send("Read the file notes.txt and tell me when the meeting is.")
    h.wait_idle(timeout=600_000)
    messages = h.controller.chat.conversation.messages
    assert any(m.role == "tool" and "14:30" in m.content for m in messages)
    answer = messages[-1]
    assert answer.role == "assistant" and "thursday" in answer.content.lower()
    assert "14:30" in answer.content or "2:30" in answer.content

    h.type_and_send("Create a new file called hello.txt that contains exactly: hello world")
    approver = h.window.approver
    h.qtbot.waitUntil(lambda: bool(approver.open_dialogs), timeout=600_000)
    dialog = approver.open_dialogs[0]
    assert "hello.txt" in dialog.summary.text()
    assert dialog.grab().save(str(artifacts_dir / "first-run-approval.png"))
    h.qtbot.mouseClick(dialog.once_button, Qt.MouseButton.LeftButton)
    h.wait_idle(timeout=600_000)
    assert (workspace / "hello.txt").read_text(encoding="utf-8").strip() == "hello world"
    assert h.window.grab().save(str(artifacts_dir / "first-run-file-tasks.png"))
