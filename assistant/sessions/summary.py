"""Branch summaries (how they are stored and recognised) and chat titles; see
docs/ARCHITECTURE.md ("The chat file")."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from assistant.conversation import Message

BRANCH_SUMMARY_PREFIX = "[Summary of an abandoned branch]"

#: ``summarizer(messages, budget_tokens) -> summary text``.
Summarizer = Callable[[list[Message], int], str]

#: Tokens a branch summary may take.
DEFAULT_SUMMARY_BUDGET = 512
TITLE_LENGTH = 60


def branch_summary_message(entry_id: str, summary: str, timestamp: float) -> Message:
    """The user message that carries a branch summary into the model's context."""
    content = f"{BRANCH_SUMMARY_PREFIX}\n{summary}"
    return Message(id=entry_id, role="user", content=content, timestamp=timestamp)


def is_branch_summary(message: Message) -> bool:
    return message.role == "user" and message.content.startswith(BRANCH_SUMMARY_PREFIX + "\n")


def summary_text(message: Message) -> str:
    """The summary inside a branch-summary message (its content without the prefix line)."""
    return message.content[len(BRANCH_SUMMARY_PREFIX) + 1 :]


def _one_line(text: str, limit: int) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def title_from_messages(messages: Iterable[Message]) -> str | None:
    """The first user message (not a branch summary), on one line, clipped."""
    for msg in messages:
        if msg.role == "user" and not is_branch_summary(msg) and msg.content.strip():
            return _one_line(msg.content, TITLE_LENGTH)
    return None


DEFAULT_TITLE = "New chat"


def resolve_title(
    explicit: str | None, header_title: str | None, messages: Iterable[Message]
) -> str:
    """The newest rename, else the created title, else the first user message, else "New chat"."""
    return explicit or header_title or title_from_messages(messages) or DEFAULT_TITLE
