"""Branch summaries and chat titles.

When the user leaves a branch, its messages since the common ancestor are summarized by a
:data:`Summarizer` (the engine passes one backed by the loaded model) and the summary joins
the new branch's context.

Representation (the documented choice): a branch summary is stored as its own
``branch_summary`` entry and appears in the rebuilt :class:`Conversation` as a **user**
message whose id is the entry's id and whose content is :data:`BRANCH_SUMMARY_PREFIX`, a
newline, then the summary. The model therefore reads it like the compaction summary (a
synthetic user message); the UI recognizes it with :func:`is_branch_summary` (or
``ChatHandle.is_branch_summary(id)``, which checks the entry type) and shows it as a note.
It is never a sibling in the ``< 1/2 >`` switcher.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

from assistant.conversation import Message

BRANCH_SUMMARY_PREFIX = "[Summary of an abandoned branch]"

#: ``summarizer(messages, budget_tokens) -> summary text``.
Summarizer = Callable[[list[Message], int], str]

DEFAULT_SUMMARY_BUDGET = 512
TITLE_LENGTH = 60

_PATH_KEYS = ("path", "file", "file_path", "filename", "filepath", "src", "dst", "target")
_WRITE_WORDS = ("write", "edit", "create", "delete", "remove", "move", "rename", "patch")


def branch_summary_message(entry_id: str, summary: str, timestamp: float) -> Message:
    """The user message that carries a branch summary into the model's context."""
    return Message(
        id=entry_id,
        role="user",
        content=f"{BRANCH_SUMMARY_PREFIX}\n{summary}",
        timestamp=timestamp,
    )


def is_branch_summary(message: Message) -> bool:
    return message.role == "user" and message.content.startswith(BRANCH_SUMMARY_PREFIX + "\n")


def summary_text(message: Message) -> str:
    """The summary inside a branch-summary message (its content without the prefix line)."""
    return message.content[len(BRANCH_SUMMARY_PREFIX) + 1 :]


def estimate_tokens(text: str) -> int:
    """A conservative estimate (4 characters a token), used only to respect budgets."""
    return math.ceil(len(text) / 4)


def files_touched(messages: Iterable[Message]) -> tuple[list[str], list[str]]:
    """(files read, files modified) named in tool-call arguments, in first-seen order."""
    read: list[str] = []
    modified: list[str] = []
    for msg in messages:
        for call in msg.tool_calls:
            target = modified if any(w in call.name.lower() for w in _WRITE_WORDS) else read
            for key in _PATH_KEYS:
                value = call.arguments.get(key)
                values = value if isinstance(value, list) else [value]
                for item in values:
                    if isinstance(item, str) and item and item not in target:
                        target.append(item)
    return read, modified


def _one_line(text: str, limit: int) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def extractive_summary(messages: list[Message], budget: int) -> str:
    """Deterministic fallback: the user's requests, files touched and the last reply.

    Fits ``budget`` tokens (estimated) by dropping the oldest requests first, then clipping.
    """
    requests = [
        _one_line(m.content, 200)
        for m in messages
        if m.role == "user" and m.content.strip() and not is_branch_summary(m)
    ]
    read, modified = files_touched(messages)
    replies = [m for m in messages if m.role == "assistant" and m.content.strip()]
    tail: list[str] = []
    if read:
        tail.append("Files read: " + ", ".join(read))
    if modified:
        tail.append("Files modified: " + ", ".join(modified))
    if replies:
        tail.append("Last reply there: " + _one_line(replies[-1].content, 300))

    def render(reqs: list[str]) -> str:
        head = ["The user explored another branch of this chat and left it."]
        if reqs:
            head.append("There the user asked:")
            head.extend(f"- {r}" for r in reqs)
        return "\n".join(head + tail)

    kept = list(requests)
    text = render(kept)
    while kept and estimate_tokens(text) > budget:
        kept.pop(0)
        text = render(kept)
    limit = max(0, budget) * 4
    if len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    return text


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
    """A chat's title: the newest rename, else the title it was created with, else the
    first user message, else "New chat"."""
    return explicit or header_title or title_from_messages(messages) or DEFAULT_TITLE
