"""An approver that denies every request (a user who always says no)."""

from __future__ import annotations

from assistant.tools.approval import ApprovalDecision, ApprovalRequest


class DenyingApprover:
    def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.DENY
