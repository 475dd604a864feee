"""What each chat remembers about itself: its model and its system prompt.

The settings hold the defaults (the model loaded now, the system prompt for new chats). A
chat records both as ``setting`` entries in its own file (see
:meth:`assistant.sessions.handle.ChatHandle.record_setting`): the system prompt when the
chat is created or changed for it, the model whenever it answers with a model other than the
one recorded. So a chat keeps the system prompt it started with when the default changes
later, and opening a chat last used with another model can offer to switch back.

:class:`BranchView` is the other per-chat state the service keeps: a branch the user is
looking at with the ``< >`` switcher. Looking writes nothing; the chat moves to that branch
(with a summary of the one it leaves) only when the user continues on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import JsonValue

from assistant.conversation import Conversation

MODEL = "model"
SYSTEM_PROMPT = "system_prompt"


@dataclass(frozen=True)
class ChatOptions:
    model: str
    system_prompt: str


def recorded(settings: dict[str, JsonValue], name: str) -> str | None:
    """A text setting a chat recorded (None: not recorded, or not text)."""
    value = settings.get(name)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class BranchView:
    """A branch shown but not (yet) continued: its position and its conversation."""

    leaf: str
    conversation: Conversation
