"""What the model sees, rebuilt from the conversation exactly (docs/COMPACTION.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assistant.conversation import Conversation, Message

SYSTEM_ID = "system"
SUMMARY_ID = "summary"


@dataclass(frozen=True)
class View:
    """How tool results are shown: notes for cleared ones, cut text for unanswered ones."""

    #: message id -> what a pruned result shows instead of the bare placeholder.
    notes: Mapping[str, str] = field(default_factory=dict)
    #: message id -> the cut content of an unanswered result (or user message) that could
    #: not fit whole.
    trims: Mapping[str, str] = field(default_factory=dict)


EMPTY_VIEW = View()


def system_message(system_prompt: str) -> Message:
    return Message(id=SYSTEM_ID, role="system", content=system_prompt, timestamp=0.0)


def summary_message(summary: str) -> Message:
    return Message(id=SUMMARY_ID, role="user", content=summary, timestamp=0.0)


def shown(msg: Message, view: View) -> Message:
    """``msg`` as the model sees it under ``view`` (cleared or cut; itself when unchanged)."""
    if msg.role == "system":
        return msg
    if msg.role == "tool" and msg.pruned:
        note = view.notes.get(msg.id)
        if note is None:
            return msg
        return msg.model_copy(update={"content": note, "pruned": False})
    cut = view.trims.get(msg.id)
    if cut is None:
        return msg
    return msg.model_copy(update={"content": cut})


def build_context(
    conv: Conversation, system_prompt: str, *, kept: Sequence[Message], summary: str | None = None,
    view: View = EMPTY_VIEW,
) -> list[Message]:
    """System prompt + summary (synthetic user message) + ``kept`` under ``view``;
    ``summary`` in place of the latest compaction's (to measure one before it is stored)."""
    out = [system_message(system_prompt)]
    rec = conv.last_compaction
    text = summary if summary is not None else (rec.summary if rec is not None else None)
    if text is not None:
        out.append(summary_message(text))
    out.extend(shown(m, view) for m in kept)
    return out


def to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.to_openai() for m in messages]
