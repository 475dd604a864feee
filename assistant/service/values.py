"""The events and values the faces show, each by one name: ``ui/`` and ``cli/`` import them
from here (and the rest of ``service/``), never from the packages that make them; the
``faces-through-the-service`` contract in pyproject.toml holds that.

Pure helpers that word a value for the screen (a compaction's note, a branch summary's text,
a chat as Markdown) come along with the value they word.
"""

from __future__ import annotations

from assistant.agent.commands import COMMANDS, ChatInput, HelpRow, parse_input
from assistant.agent.events import (
    AgentEvent,
    AssistantDelta,
    ContextChanged,
    ContextUsage,
    MessageAdded,
    MessageRefused,
    ModelCallFinished,
    Notice,
    PromptProgress,
    ToolCallStarted,
    TurnFinished,
)
from assistant.compaction.events import (
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    ContextEvent,
    PruneEvent,
    compaction_note,
    context_line,
    prune_note,
)
from assistant.compaction.summary import DEFERRED_NOTE
from assistant.llm.base import CancelToken, LLMError, ModelInfo
from assistant.llm.kv_state import Usage
from assistant.sessions.errors import SessionError
from assistant.sessions.export import to_markdown
from assistant.sessions.handle import ChatHandle
from assistant.sessions.store import ChatSummary
from assistant.sessions.summary import is_branch_summary, summary_text

__all__ = [
    "COMMANDS",
    "DEFERRED_NOTE",
    "AgentEvent",
    "AssistantDelta",
    "CancelToken",
    "ChatHandle",
    "ChatInput",
    "ChatSummary",
    "CompactionFailed",
    "CompactionFinished",
    "CompactionStarted",
    "ContextChanged",
    "ContextEvent",
    "ContextUsage",
    "HelpRow",
    "LLMError",
    "MessageAdded",
    "MessageRefused",
    "ModelCallFinished",
    "ModelInfo",
    "Notice",
    "PromptProgress",
    "PruneEvent",
    "SessionError",
    "ToolCallStarted",
    "TurnFinished",
    "Usage",
    "compaction_note",
    "context_line",
    "is_branch_summary",
    "parse_input",
    "prune_note",
    "summary_text",
    "to_markdown",
]
