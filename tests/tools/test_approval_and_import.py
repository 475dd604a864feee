"""The approval gate and importing dropped files."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.conversation import ToolCall
from assistant.llm.base import CancelToken
from assistant.tools.approval import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalRequest,
    AutoApprover,
)
from assistant.tools.importing import import_file
from assistant.tools.workspace import SandboxError, Workspace
from tests.fakes.approval import DenyingApprover


class Scripted:
    def __init__(self, *answers: ApprovalDecision) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return self.answers.pop(0)


def _request(tool: str = "run_command", cancel: CancelToken | None = None) -> ApprovalRequest:
    return ApprovalRequest(
        call=ToolCall(name=tool, arguments={}),
        summary="s",
        preview="",
        workspace=Path("."),
        cancel=cancel,
    )


def test_allow_once_asks_again() -> None:
    approver = Scripted(ApprovalDecision.ALLOW_ONCE, ApprovalDecision.DENY)
    gate = ApprovalGate(approver)
    assert gate.approve(_request(), "ask")
    assert not gate.approve(_request(), "ask")
    assert len(approver.asked) == 2


def test_allow_for_chat_remembers_per_tool_until_reset() -> None:
    approver = Scripted(
        ApprovalDecision.ALLOW_FOR_CHAT, ApprovalDecision.DENY, ApprovalDecision.DENY
    )
    gate = ApprovalGate(approver)
    assert gate.approve(_request(), "ask")
    assert gate.approve(_request(), "ask")  # not asked
    assert not gate.approve(_request("write_file"), "ask")  # other tool: asked
    gate.reset()
    assert not gate.approve(_request(), "ask")
    assert len(approver.asked) == 3


def test_auto_policy_and_missing_approver() -> None:
    assert ApprovalGate(None).approve(_request(), "auto")
    assert not ApprovalGate(None).approve(_request(), "ask")
    assert ApprovalGate(AutoApprover()).approve(_request(), "ask")
    assert not ApprovalGate(DenyingApprover()).approve(_request(), "ask")


def test_cancel_while_asking_denies() -> None:
    cancel = CancelToken()

    class Pressing:
        def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
            cancel.cancel()
            return ApprovalDecision.ALLOW_FOR_CHAT

    gate = ApprovalGate(Pressing())
    assert not gate.approve(_request(cancel=cancel), "ask")
    gate.approver = None  # nothing was remembered: with no one to ask, the next call is denied
    assert not gate.approve(_request(), "ask")


def test_import_file_inside_is_used_in_place(root: Path, ws: Workspace) -> None:
    (root / "a.txt").write_text("a", encoding="utf-8")
    path, copied = import_file(ws, root / "a.txt", max_bytes=100)
    assert path == (root / "a.txt").resolve() and not copied


def test_import_file_outside_is_copied_and_deduplicated(
    tmp_path: Path, root: Path, ws: Workspace
) -> None:
    src = tmp_path / "report.txt"
    src.write_text("v1", encoding="utf-8")
    first, copied = import_file(ws, src, max_bytes=100)
    assert copied and ws.display(first) == "dropped/report.txt"
    again, copied_again = import_file(ws, src, max_bytes=100)
    assert again == first and not copied_again
    src.write_text("v2", encoding="utf-8")
    second, _ = import_file(ws, src, max_bytes=100)
    assert ws.display(second) == "dropped/report-2.txt"
    assert second.read_text(encoding="utf-8") == "v2"


def test_import_refuses_folders_missing_and_large(tmp_path: Path, ws: Workspace) -> None:
    with pytest.raises(SandboxError):
        import_file(ws, tmp_path, max_bytes=100)
    with pytest.raises(SandboxError):
        import_file(ws, tmp_path / "missing", max_bytes=100)
    big = tmp_path / "big.txt"
    big.write_text("x" * 200, encoding="utf-8")
    with pytest.raises(SandboxError):
        import_file(ws, big, max_bytes=100)
