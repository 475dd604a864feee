"""What the agent reports while it works. Emitted from the worker thread, in order.

The UI turns these into queued Qt signals; the terminal chat prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
    """The model is evaluating the prompt: ``done`` of ``total`` tokens (cached ones count
    as done). Reported between batches; no event means nothing needed evaluating."""

    done: int
    total: int


@dataclass(frozen=True)
class ContextChanged:
    """Pruning or compaction happened (or was tried): see assistant.compaction.events."""

    event: ContextEvent


@dataclass(frozen=True)
class ModelCallFinished:
    """One model call ended. ``ttft_s``: from the start of the call's preparation (pruning,
    counting, any compaction) to its first token, i.e. what the user waited for."""

    result: GenerationResult
    ttft_s: float | None = None


@dataclass(frozen=True)
class MessageRefused:
    """A message was not sent: it does not fit the model's window whole (``tokens`` of it,
    ``room`` for it). Nothing was saved; a face gives ``text`` back to the user.
    ``replaces``: the user message an edit or a regeneration would have answered (a face
    offers to edit it); None for a new message."""

    text: str
    tokens: int
    room: int
    replaces: str | None = None


@dataclass(frozen=True)
class TurnFinished:
    stopped: bool = False
    error: str | None = None


AgentEvent = (
    MessageAdded
    | AssistantDelta
    | ToolCallStarted
    | Notice
    | ContextUsage
    | PromptProgress
    | ContextChanged
    | ModelCallFinished
    | MessageRefused
    | TurnFinished
)
