"""One tool call from request to result (check, approve, run); every outcome is a result, so
each call in the history gets exactly one."""

from __future__ import annotations

from typing import Literal

from assistant.config import ApprovalPolicy
from assistant.conversation import Message, ToolCall
from assistant.tools.approval import ApprovalGate, ApprovalRequest
from assistant.tools.base import ToolContext, ToolResult
from assistant.tools.registry import CALL_FORMAT_HINT, ToolRegistry

#: The result of a call that was stopped, or never started because the user pressed Stop.
CANCELLED_RESULT = "cancelled: the user stopped this tool call before it finished"


class ToolRunner:
    """Runs calls through the registry, asking the approval gate when a tool needs it."""

    def __init__(self, registry: ToolRegistry, gate: ApprovalGate) -> None:
        self.registry = registry
        self.gate = gate

    def run(self, call: ToolCall, ctx: ToolContext, *, initiated_by: Literal["model", "user"],
            approval: ApprovalPolicy, parse_error: str | None = None) -> ToolResult:
        if parse_error is not None:
            return ToolResult.error(
                f"The tool call could not be used: {parse_error}.\n{CALL_FORMAT_HINT}\n"
                f"Available tools: {', '.join(self.registry.names())}."
            )
        if ctx.cancelled:
            return ToolResult.error(CANCELLED_RESULT)
        checked = self.registry.check(call)
        if isinstance(checked, ToolResult):
            return checked
        if initiated_by == "model" and checked.tool.needs_approval:
            try:
                tool, args = checked.tool, checked.args
                request = ApprovalRequest(call=call, summary=tool.describe(args, ctx),
                                          preview=tool.preview(args, ctx),
                                          workspace=ctx.workspace.root, cancel=ctx.cancel)
            except Exception as exc:  # describing must not end the turn either
                return ToolResult.error(f"{call.name} failed: {exc}")
            allowed = self.gate.approve(request, approval)
            if ctx.cancelled:
                return ToolResult.error(CANCELLED_RESULT)
            if not allowed:
                return ToolResult.error(
                    f"The user denied permission for this {call.name} call. Do not retry it; "
                    "ask the user what they would like instead."
                )
        result = self.registry.execute(checked, ctx)
        if ctx.cancelled and result.is_error and "cancelled" in result.text:
            return ToolResult.error(f"{CANCELLED_RESULT}\n{result.text}")
        return result


def result_message(
    call: ToolCall, result: ToolResult, initiated_by: Literal["model", "user"]
) -> Message:
    return Message(role="tool", content=result.text, tool_call_id=call.id, name=call.name,
                   is_error=result.is_error, initiated_by=initiated_by)
