"""The context bar's numbers: the prompt about to be sent, split into segments."""

from __future__ import annotations

from assistant.agent.events import ContextUsage
from assistant.compaction.controller import PreparedRequest


def context_usage(prepared: PreparedRequest) -> ContextUsage:
    """Everything comes from the prepared request: the exact prompt count, the window and
    the reply's room the controller computed, and its segments (a controller that does not
    split the prompt reports it all as conversation)."""
    total = prepared.prompt_tokens
    segments = dict(prepared.segments) or {"conversation": total}
    return ContextUsage(
        prompt_tokens=total, window=prepared.window, reserve=prepared.reserve, segments=segments
    )
