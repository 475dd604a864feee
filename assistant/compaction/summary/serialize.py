"""Messages as plain text for the summarizer (docs/COMPACTION.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from assistant.conversation import Message, ToolCall

TOOL_RESULT_CHARS = 500
#: Pruned results were already judged old: the summarizer gets less of them.
PRUNED_RESULT_CHARS = 160
ARG_CHARS = 200
TRANSCRIPT_MARKERS = ("[User]:", "[Assistant]:", "[Tool call]:", "[Tool result]:")


def texts(messages: Sequence[Message], role: str) -> list[str]:
    """What the messages of ``role`` say, as the model sees them (the empty ones left out)."""
    return [t for m in messages if m.role == role and (t := m.model_view_content().strip())]


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" [... {len(text) - limit} more characters truncated]"


def _arg(value: Any) -> str:
    raw = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return json.dumps(_clip(raw, ARG_CHARS), ensure_ascii=False)


def format_call(call: ToolCall) -> str:
    """``name(key="value", ...)`` with long values clipped."""
    if call.raw_arguments is not None:
        return f"{call.name}({_clip(call.raw_arguments, ARG_CHARS)})"
    args = ", ".join(f"{key}={_arg(val)}" for key, val in call.arguments.items())
    return f"{call.name}({args})"


def serialize_message(msg: Message, *, tool_chars: int = TOOL_RESULT_CHARS) -> str:
    """One message as labelled text (possibly several lines)."""
    lines: list[str] = []
    if msg.role == "user":
        lines.append(f"[User]: {msg.model_view_content().strip()}")
    elif msg.role == "system":
        lines.append(f"[System note]: {msg.content.strip()}")
    elif msg.role == "assistant":
        label = "[Assistant (stopped by the user)]" if msg.stopped else "[Assistant]"
        if msg.model_view_content().strip():
            lines.append(f"{label}: {msg.model_view_content().strip()}")
        for call in msg.tool_calls:
            who = " (run by the user)" if msg.initiated_by == "user" else ""
            lines.append(f"[Tool call{who}]: {format_call(call)}")
    else:
        label = "[Tool result (error)]" if msg.is_error else "[Tool result]"
        name = f" {msg.name}" if msg.name else ""
        limit = min(tool_chars, PRUNED_RESULT_CHARS) if msg.pruned else tool_chars
        lines.append(f"{label}{name}: {_clip(msg.content, limit)}")
    return "\n".join(lines)


def serialize(messages: Sequence[Message], *, tool_chars: int = TOOL_RESULT_CHARS) -> str:
    """Messages as one transcript text, blank line between messages."""
    parts = [serialize_message(m, tool_chars=tool_chars) for m in messages]
    return "\n\n".join(p for p in parts if p)
