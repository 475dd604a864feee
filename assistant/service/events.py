"""What the session service reports besides the agent's events.

A face subscribes one callback to :class:`~assistant.service.service.ChatService` and gets
every :data:`ServiceEvent`: the agent's events while a job runs (from the worker thread, in
order) and these (from the owner's thread). The window turns them into queued Qt signals;
the terminal prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assistant.agent.events import AgentEvent
from assistant.config import Settings
from assistant.llm.base import ModelInfo
from assistant.service.status import Status
from assistant.sessions.store import ChatSummary


@dataclass(frozen=True)
class StatusChanged:
    status: Status


@dataclass(frozen=True)
class QueueChanged:
    """Input waiting for the model (sent in order when it is free or has loaded)."""

    texts: tuple[str, ...]


@dataclass(frozen=True)
class ChatsChanged:
    """The chat list changed (a chat was created, renamed, deleted, restored, updated)."""


@dataclass(frozen=True)
class ConversationReset:
    """Render the open conversation again from scratch (opened, new, branch switched).
    ``chat_id`` is None for a new chat that has no file yet."""

    chat_id: str | None


@dataclass(frozen=True)
class ModelChanged:
    """A model finished loading (``info``), or failed to (``error``), or a load started
    (both empty)."""

    info: ModelInfo | None = None
    error: str = ""


@dataclass(frozen=True)
class SettingsChanged:
    settings: Settings
    #: Whether the model is being reloaded because of the change.
    reloading: bool


@dataclass(frozen=True)
class ModelSwitchSuggested:
    """The chat just opened was last used with ``chat_model`` and ``loaded_model`` is
    loaded: a face may ask whether to switch (``ChatService.use_model``)."""

    chat_id: str
    chat_model: str
    loaded_model: str


@dataclass(frozen=True)
class PrefillProgress:
    """The model is reading the prompt: ``done`` of ``total`` tokens (cached ones count as
    done), with the speed so far and the time left once they can be estimated."""

    done: int
    total: int
    tokens_per_s: float | None = None
    eta_s: float | None = None


@dataclass(frozen=True)
class ReplyStats:
    """What one model call cost: the figures of the terminal's ``[stats]`` line and the
    window's message footer (see :mod:`assistant.service.progress`)."""

    prompt_tokens: int
    evaluated: int
    reused: int
    completion_tokens: int
    #: Seconds from the call to the first token (prompt evaluation included).
    ttft_s: float | None
    tokens_per_s: float | None
    prefill_tokens_per_s: float | None = None


@dataclass(frozen=True)
class ExportPathNeeded:
    """``/export`` without a path: the face asks where (a file dialog, or a usage line)."""

    suggested: Path


@dataclass(frozen=True)
class ChatPickerRequested:
    """``/resume`` without a chat: the list was given as a notice; a face that has a
    chat picker may open it."""

    chats: tuple[ChatSummary, ...]


@dataclass(frozen=True)
class ModelStateRestored:
    """A reopened chat's saved model state was loaded (``tokens`` > 0: its prompt
    evaluation is skipped as far as they match) or not (``miss`` says why)."""

    chat_id: str
    tokens: int
    seconds: float
    miss: str = ""


@dataclass(frozen=True)
class PrefillTuned:
    """The prompt-evaluation settings in force, in words (e.g. "2 threads, n_batch 512,
    n_ubatch 512 (measured); chunk reuse off")."""

    text: str


ServiceEvent = (
    AgentEvent
    | StatusChanged
    | QueueChanged
    | ChatsChanged
    | ConversationReset
    | ModelChanged
    | SettingsChanged
    | ModelSwitchSuggested
    | PrefillProgress
    | ReplyStats
    | ExportPathNeeded
    | ChatPickerRequested
    | ModelStateRestored
    | PrefillTuned
)
