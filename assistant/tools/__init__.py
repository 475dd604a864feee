"""Tools the model (and the user) can call, confined to the workspace folder.

Each tool is a small module; :class:`~assistant.tools.registry.ToolRegistry` holds them,
gives their schemas to the model and runs calls safely. :mod:`assistant.tools.workspace`
is the sandbox every path goes through; :mod:`assistant.tools.approval` asks the user before
a model-initiated call changes anything.
"""

from assistant.tools.approval import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalRequest,
    Approver,
    AutoApprover,
)
from assistant.tools.base import Tool, ToolArgs, ToolContext, ToolLimits, ToolResult
from assistant.tools.registry import CheckedCall, ToolRegistry, tool_schema
from assistant.tools.workspace import SandboxError, Workspace

__all__ = [
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalRequest",
    "Approver",
    "AutoApprover",
    "CheckedCall",
    "SandboxError",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "ToolLimits",
    "ToolRegistry",
    "ToolResult",
    "Workspace",
    "tool_schema",
]
