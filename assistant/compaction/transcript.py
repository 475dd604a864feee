"""A saved transcript to replay: OpenAI-format messages, one JSON object per line.
More in docs/COMPACTION.md."""

from __future__ import annotations

import json
from pathlib import Path

from assistant import jsonlimits
from assistant.conversation import Message


class TranscriptError(ValueError):
    """A transcript line that is not a valid message."""


def load_transcript(path: Path) -> tuple[str | None, list[Message]]:
    """(system prompt from leading system messages, the other messages)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TranscriptError(f"{path}: cannot read ({exc})") from exc
    system: list[str] = []
    messages: list[Message] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = jsonlimits.loads(line, "the line")
        except json.JSONDecodeError as exc:
            raise TranscriptError(f"{path}:{number}: invalid JSON ({exc.msg})") from exc
        except ValueError as exc:
            raise TranscriptError(f"{path}:{number}: {exc}") from exc
        try:
            msg = Message.from_openai(data)
        except (ValueError, TypeError, AttributeError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise TranscriptError(f"{path}:{number}: not a valid message ({reason})") from exc
        if msg.role == "system" and not messages:
            system.append(msg.content)
        else:
            messages.append(msg)
    return ("\n\n".join(system) if system else None), messages
