"""Tool approval: a dialog on the GUI thread while the worker waits."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import Qt

from assistant.config import Settings
from assistant.conversation import ToolCall
from assistant.tools.approval import ApprovalDecision, ApprovalRequest
from assistant.ui.approval import ApprovalDialog, GuiApprover
from tests.fakes.scripted import ScriptedBackend

WRITE_CALL = (
    '```tool_call\n{"name": "write_file", "arguments": {"path": "hello.txt", '
    '"content": "hi there"}}\n```'
)


def _request() -> ApprovalRequest:
    return ApprovalRequest(
        call=ToolCall(name="run_command", arguments={"command": "ls"}),
        summary="Run `ls` in the workspace",
        preview="",
        workspace=Path("/tmp/ws"),
    )


def _ask_on_thread(approver: GuiApprover) -> tuple[threading.Thread, list[ApprovalDecision]]:
    out: list[ApprovalDecision] = []
    thread = threading.Thread(target=lambda: out.append(approver.request_approval(_request())))
    thread.start()
    return thread, out


def test_allow_once_and_deny_from_a_worker_thread(qtbot) -> None:
    approver = GuiApprover()
    for button, expected in (
        ("once_button", ApprovalDecision.ALLOW_ONCE),
        ("chat_button", ApprovalDecision.ALLOW_FOR_CHAT),
        ("deny_button", ApprovalDecision.DENY),
    ):
        thread, out = _ask_on_thread(approver)
        qtbot.waitUntil(lambda: bool(approver.open_dialogs))
        dialog: ApprovalDialog = approver.open_dialogs[0]
        assert dialog.summary.text() == "Run `ls` in the workspace"
        qtbot.mouseClick(getattr(dialog, button), Qt.MouseButton.LeftButton)
        thread.join(5)
        assert out == [expected]
        qtbot.waitUntil(lambda: not approver.open_dialogs)


def test_closing_the_dialog_denies(qtbot) -> None:
    approver = GuiApprover()
    thread, out = _ask_on_thread(approver)
    qtbot.waitUntil(lambda: bool(approver.open_dialogs))
    approver.open_dialogs[0].reject()
    thread.join(5)
    assert out == [ApprovalDecision.DENY]


def test_shutdown_releases_a_waiting_worker(qtbot) -> None:
    approver = GuiApprover()
    thread, out = _ask_on_thread(approver)
    qtbot.waitUntil(lambda: bool(approver.open_dialogs))
    approver.close()
    thread.join(5)
    assert out == [ApprovalDecision.DENY] and not thread.is_alive()


def test_model_write_is_allowed_through_the_dialog(make_window, tmp_path: Path) -> None:
    backend = ScriptedBackend([WRITE_CALL, "I wrote hello.txt."])
    h = make_window(backend=backend, settings=Settings(workspace=str(tmp_path / "ws")))
    approver = h.window.approver
    h.type_and_send("Create hello.txt")
    h.qtbot.waitUntil(lambda: bool(approver.open_dialogs), timeout=20_000)
    dialog = approver.open_dialogs[0]
    assert "hello.txt" in dialog.summary.text() + dialog.preview.toPlainText()
    h.qtbot.mouseClick(dialog.once_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    assert (tmp_path / "ws" / "hello.txt").read_text(encoding="utf-8") == "hi there"
    assert h.controller.chat.conversation.messages[-1].content == "I wrote hello.txt."


def test_model_write_is_denied_through_the_dialog(make_window, tmp_path: Path) -> None:
    backend = ScriptedBackend([WRITE_CALL, "OK, I did not write it."])
    h = make_window(backend=backend, settings=Settings(workspace=str(tmp_path / "ws")))
    approver = h.window.approver
    h.type_and_send("Create hello.txt")
    h.qtbot.waitUntil(lambda: bool(approver.open_dialogs), timeout=20_000)
    h.qtbot.mouseClick(approver.open_dialogs[0].deny_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    assert not (tmp_path / "ws" / "hello.txt").exists()
    tool_msgs = [m for m in h.controller.chat.conversation.messages if m.role == "tool"]
    assert tool_msgs and tool_msgs[0].is_error
    card = h.window.chat_view.cards[tool_msgs[0].tool_call_id or ""]
    assert card.result is not None and card.result.is_error


def test_stop_while_asking_closes_the_dialog(make_window, tmp_path: Path) -> None:
    backend = ScriptedBackend([WRITE_CALL])
    h = make_window(backend=backend, settings=Settings(workspace=str(tmp_path / "ws")))
    approver = h.window.approver
    h.type_and_send("Create hello.txt")
    h.qtbot.waitUntil(lambda: bool(approver.open_dialogs), timeout=20_000)
    h.window.escape()
    h.wait_idle()
    h.qtbot.waitUntil(lambda: not approver.open_dialogs)
    assert not (tmp_path / "ws" / "hello.txt").exists()
