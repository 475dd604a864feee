"""What the model sees, rebuilt from the conversation exactly.

``[system prompt] + [latest summary as a synthetic user message] + [kept messages]``, with
pruned tool results shown as the placeholder (``Message.to_openai`` does that). The
summary message is built here on every call and never stored among the messages, so a
resumed chat yields the same tokens (and the same KV-cache prefix) as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assistant.conversation import Conversation, Message

SYSTEM_ID = "system"
SUMMARY_ID = "summary"


def system_message(system_prompt: str) -> Message:
    return Message(id=SYSTEM_ID, role="system", content=system_prompt, timestamp=0.0)


def summary_message(summary: str) -> Message:
    return Message(id=SUMMARY_ID, role="user", content=summary, timestamp=0.0)


def build_context(
    conv: Conversation, system_prompt: str, *, summary: str | None = None,
    kept: Sequence[Message] | None = None,
) -> list[Message]:
    """System prompt + summary (synthetic user message) + kept messages.

    ``summary`` and ``kept`` override the conversation's latest compaction (used to measure
    a compaction before it is stored).
    """
    out = [system_message(system_prompt)]
    rec = conv.last_compaction
    text = summary if summary is not None else (rec.summary if rec is not None else None)
    if text is not None:
        out.append(summary_message(text))
    out.extend(conv.kept_messages() if kept is None else kept)
    return out


def to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.to_openai() for m in messages]
