"""What the session service reports besides the agent's events (from the owner's thread)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assistant.agent.events import AgentEvent
from assistant.config import Settings
from assistant.conversation import ReplyFigures
from assistant.llm.base import ModelInfo
from assistant.service.status import Status
from assistant.sessions.store import ChatSummary


@dataclass(frozen=True)
class StatusChanged:
    status: Status
    #: The event that caused the change is posted right after it: a face shows the two
    #: together (no frame shows one without the other).
    leads: bool = False


@dataclass(frozen=True)
class QueueChanged:
    """Input waiting for the model (sent in order when it is free or has loaded)."""

    texts: tuple[str, ...]


@dataclass(frozen=True)
class ChatsChanged:
    """The chat list changed (a chat was created, renamed, deleted, restored, updated)."""


@dataclass(frozen=True)
class ConversationReset:
    """Render the open conversation again (``chat_id`` None: a new chat without a file)."""

    chat_id: str | None


@dataclass(frozen=True)
class ModelChanged:
    """A model loaded (``info``), failed (``error``), or a load started (both empty)."""

    info: ModelInfo | None = None
    error: str = ""


@dataclass(frozen=True)
class SettingsChanged:
    settings: Settings
    #: Whether the model is being reloaded because of the change.
    reloading: bool


@dataclass(frozen=True)
class ModelSwitchSuggested:
    """The chat just opened was last used with ``chat_model``: a face may offer to switch."""

    chat_id: str
    chat_model: str
    loaded_model: str


@dataclass(frozen=True)
class PrefillProgress:
    """The model is reading the prompt: ``done`` of ``total`` tokens, with speed and time left."""

    done: int
    total: int
    tokens_per_s: float | None = None
    eta_s: float | None = None


class ReplyStats(ReplyFigures):
    """What one model call cost (the ``[stats]`` line and the message footer)."""

    prefill_tokens_per_s: float | None = None


@dataclass(frozen=True)
class ExportPathNeeded:
    """``/export`` without a path: the face asks where (a file dialog, or a usage line)."""

    suggested: Path


@dataclass(frozen=True)
class ChatPickerRequested:
    """``/resume`` without a chat: a face that has a chat picker may open it."""

    chats: tuple[ChatSummary, ...]


@dataclass(frozen=True)
class ModelStateRestored:
    """A reopened chat's saved model state was loaded (``tokens`` > 0) or not (``miss``: why)."""

    chat_id: str
    tokens: int
    seconds: float
    miss: str = ""


@dataclass(frozen=True)
class PrefillTuned:
    """The prompt-evaluation settings in force, in words."""

    text: str


ServiceEvent = (
    AgentEvent | StatusChanged | QueueChanged | ChatsChanged | ConversationReset | ModelChanged
    | SettingsChanged | ModelSwitchSuggested | PrefillProgress | ReplyStats | ExportPathNeeded
    | ChatPickerRequested | ModelStateRestored | PrefillTuned
)
