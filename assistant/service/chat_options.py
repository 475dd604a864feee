"""What each chat remembers about itself (its model and system prompt, as ``setting`` entries,
so it keeps them when the defaults change), and the branch the user only looks at."""

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
