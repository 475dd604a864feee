"""What the agent reports while it works, from the worker thread, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from assistant.agent.commands import HelpRow
from assistant.compaction.events import ContextEvent
from assistant.conversation import Message, ToolCall
from assistant.llm.base import GenerationResult


@dataclass(frozen=True)
class MessageAdded:
    """A message was appended to the conversation (already on disk when emitted)."""

    message: Message


@dataclass(frozen=True)
class AssistantDelta:
    """Streamed text of the assistant reply being written (not yet a message)."""

    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    call: ToolCall
    initiated_by: Literal["model", "user"] = "model"


@dataclass(frozen=True)
class Notice:
    level: Literal["info", "warning", "error"]
    text: str
    #: A table (``/help``): its rows, for a face that lays out the columns itself; ``text``
    #: holds them as lines lined up with spaces.
    rows: tuple[HelpRow, ...] = ()


@dataclass(frozen=True)
class ContextUsage:
    """Exact tokens of the prompt about to be sent, split for the context bar."""

    prompt_tokens: int
    window: int
    reserve: int
    #: Prompt tokens per segment (see ``PreparedRequest.segments``); they sum to
    #: ``prompt_tokens``.
    segments: dict[str, int] = field(default_factory=dict)
    #: The counts are estimates (a server engine whose tokenizer is not known).
    estimated: bool = False
    #: The size the history is kept within (0: the window); the latest turn may use the
    #: whole ``window``.
    target: int = 0


@dataclass(frozen=True)
class PromptProgress:
    """The model is evaluating the prompt: ``done`` of ``total`` tokens (cached count as done)."""

    done: int
    total: int


@dataclass(frozen=True)
class ContextChanged:
    """Pruning or compaction happened (or was tried): see assistant.compaction.events."""

    event: ContextEvent


@dataclass(frozen=True)
class ModelCallFinished:
    """One model call ended; ``ttft_s``: from the start of its preparation to the first token."""

    result: GenerationResult
    ttft_s: float | None = None


@dataclass(frozen=True)
class MessageRefused:
    """A message that does not fit the window whole (``tokens``, ``room``) was not saved; a face
    gives ``text`` back. ``replaces``: the message an edit or regeneration would answer."""

    text: str
    tokens: int
    room: int
    replaces: str | None = None


@dataclass(frozen=True)
class TurnFinished:
    stopped: bool = False
    error: str | None = None


AgentEvent = (MessageAdded | AssistantDelta | ToolCallStarted | Notice | ContextUsage
              | PromptProgress | ContextChanged | ModelCallFinished | MessageRefused | TurnFinished)
