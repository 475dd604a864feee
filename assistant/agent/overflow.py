"""What to tell the user when a prompt still does not fit after compaction: which part that
compaction cannot shrink (system prompt, tools, newest message) is too large."""

from __future__ import annotations

from collections.abc import Mapping

GENERIC = "Context too large; compaction failed. Use /compact to retry."


def overflow_message(segments: Mapping[str, int], window: int) -> str:
    """The error for a request whose prompt (by segment) did not fit ``window``."""
    if not segments:
        return GENERIC
    system = segments.get("system", 0)
    tools = segments.get("tools", 0)
    rest = segments.get("summary", 0) + segments.get("conversation", 0)
    total = system + tools + rest
    fixed = system + tools
    head = (
        f"The prompt ({total:,} tokens) and the room for the reply do not fit the context "
        f"window ({window:,} tokens), even after compaction. "
        f"What cannot be compacted: the system prompt ({system:,} tokens), the tool "
        f"descriptions ({tools:,}) and the newest message. What can: older messages and tool "
        f"outputs ({rest:,} tokens with the summary)."
    )
    if fixed * 2 >= window:  # what can never shrink takes half the window or more
        return (
            head + " The system prompt alone leaves no room: shorten it in Settings (Ctrl+,), "
            "or choose a model with a larger window."
        )
    return (
        head + " The newest message is too long for this window: send a shorter one (or read "
        "a file in parts), then use /compact to retry."
    )
