"""Asking the user before a model-initiated call changes files or runs a program (a tool the
user typed is approved by typing it); the agent asks on its worker thread."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from assistant.config import ApprovalPolicy
from assistant.conversation import ToolCall
from assistant.llm.base import CancelToken


class ApprovalDecision(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_FOR_CHAT = "allow_for_chat"
    DENY = "deny"


@dataclass(frozen=True)
class ApprovalRequest:
    call: ToolCall
    #: One line, e.g. "Run `pytest -q` in /home/me/Documents/Offline Assistant".
    summary: str
    #: Longer detail: the content to write, the diff of an edit ("" when there is none).
    preview: str
    workspace: Path
    #: Set when the user presses Stop; an approver that waits should then answer DENY.
    cancel: CancelToken | None = None

    @property
    def tool(self) -> str:
        return self.call.name


class Approver(Protocol):
    """Implemented by the UI (a dialog) and the terminal chat (a prompt)."""

    def request_approval(self, request: ApprovalRequest) -> ApprovalDecision: ...


class AutoApprover:
    """Approves everything (scripts, tests, and the "auto" setting)."""

    def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.ALLOW_ONCE


class ApprovalGate:
    """Decides whether one call may run; remembers "Allow for this chat" per tool."""

    def __init__(self, approver: Approver | None) -> None:
        self.approver = approver
        self._allowed_for_chat: set[str] = set()

    def reset(self) -> None:
        """Forget "for this chat" answers (a different chat was opened)."""
        self._allowed_for_chat.clear()

    def approve(self, request: ApprovalRequest, policy: ApprovalPolicy) -> bool:
        if policy == "auto" or request.tool in self._allowed_for_chat:
            return True
        if self.approver is None:
            return False
        decision = self.approver.request_approval(request)
        if request.cancel is not None and request.cancel.cancelled:
            return False
        if decision == ApprovalDecision.ALLOW_FOR_CHAT:
            self._allowed_for_chat.add(request.tool)
            return True
        return decision == ApprovalDecision.ALLOW_ONCE
