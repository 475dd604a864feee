"""Export a chat's active branch as Markdown or OpenAI-format JSON with annotations
(docs/ARCHITECTURE.md, "The chat file")."""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Mapping
from typing import Any

from assistant.conversation import CompactionRecord, Conversation, Message
from assistant.sessions.summary import summary_text

EXPORT_FORMAT = "offline-assistant.chat"
EXPORT_VERSION = 1

_ID_FIELDS = ("id", "first_kept_id", "last_summarized_id")

#: A chat's active branch as an export reads it: its title, its conversation, the ids of its
#: branch summaries, and after which message each compaction came.
Snapshot = tuple[str, Conversation, set[str], dict[str, int]]


# -- OpenAI JSON -----------------------------------------------------------------------------
def to_openai_export(
    conv: Conversation,
    title: str,
    *,
    branch_summary_ids: Collection[str] = (),
    compaction_after: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The export document (a JSON-ready dict) for ``conv``."""
    index = {m.id: i for i, m in enumerate(conv.messages)}
    annotations: list[dict[str, Any]] = []
    for rec in conv.compactions:
        rest = rec.model_dump(mode="json", exclude=set(_ID_FIELDS))
        annotations.append({
            "type": "compaction", "summary": rec.summary,
            "first_kept_index": _index_of(index, rec.first_kept_id),
            "last_summarized_index": _index_of(index, rec.last_summarized_id),
            "after_message": (compaction_after or {}).get(rec.id, len(conv.messages)),
            "record": rest,
        })
    pruned = [i for i, m in enumerate(conv.messages) if m.pruned]
    if pruned:
        annotations.append({"type": "pruned", "message_indices": pruned})
    annotations += [{"type": "branch_summary", "message_index": i}
                    for i, msg in enumerate(conv.messages) if msg.id in branch_summary_ids]
    annotations += [
        {"type": "message_meta", "message_index": i, "timestamp": msg.timestamp,
         "is_error": msg.is_error, "stopped": msg.stopped, "initiated_by": msg.initiated_by}
        for i, msg in enumerate(conv.messages)
    ]
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "title": title,
        "messages": [m.to_openai(as_model_sees=False) for m in conv.messages],
        "annotations": annotations,
    }


def _index_of(index: Mapping[str, int], message_id: str | None) -> int | None:
    return None if message_id is None else index.get(message_id, -1)


# -- Markdown --------------------------------------------------------------------------------
def to_markdown(conv: Conversation, title: str, *, branch_summary_ids: Collection[str] = ()) -> str:
    """A readable transcript: messages, tool calls and results, compactions as notes."""
    notes_before: dict[int, list[str]] = {}
    for n, rec in enumerate(conv.compactions, start=1):
        at = _note_position(conv, rec)
        notes_before.setdefault(at, []).append(_compaction_note(n, rec))
    exported = time.strftime("%Y-%m-%d %H:%M", time.localtime())
    parts = [f"# {_one_line(title)}", f"*Exported {exported} · {len(conv.messages)} messages*"]
    for i, msg in enumerate(conv.messages):
        parts.extend(notes_before.pop(i, []))
        parts.append(_message_markdown(msg, msg.id in branch_summary_ids))
    for rest in notes_before.values():
        parts.extend(rest)
    return "\n\n".join(parts) + "\n"


def _note_position(conv: Conversation, rec: CompactionRecord) -> int:
    ids = [m.id for m in conv.messages]
    if rec.first_kept_id in ids:
        return ids.index(rec.first_kept_id)
    if rec.last_summarized_id in ids:
        return ids.index(rec.last_summarized_id) + 1
    return len(ids)


def _compaction_note(n: int, rec: CompactionRecord) -> str:
    head = (
        f"**Note: compaction {n}** ({rec.reason}, {rec.tokens_before:,} → "
        f"{rec.tokens_after:,} tokens). The messages above were summarized for the model as:"
    )
    return _quote(head + "\n\n" + rec.summary)


def _message_markdown(msg: Message, branch_summary: bool) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(msg.timestamp))
    if branch_summary:
        return _quote("**Note: summary of an abandoned branch**\n\n" + summary_text(msg))
    if msg.role == "tool":
        mine = " (you ran it)" if msg.initiated_by == "user" else ""
        head = f"### Tool result: {msg.name or 'tool'}{mine} (`{msg.tool_call_id}`)"
        lines = [head]
        if msg.is_error:
            lines.append("*The tool reported an error.*")
        if msg.pruned:
            lines.append("*Cleared from the model's context to save room.*")
        lines.append(_fenced(msg.content))
        return "\n\n".join(lines)
    by_user = msg.role == "assistant" and msg.initiated_by == "user"
    # A tool the user ran (/read, /ls, !cmd, a dropped file) is the user's, not the model's.
    head = f"### {'User' if by_user else msg.role.capitalize()} · {when}"
    lines = [head]
    if msg.content:
        lines.append(msg.content)
    for call in msg.tool_calls:
        who = "You ran" if by_user else "**Tool call**"
        lines.append(f"{who} `{call.name}` (`{call.id}`)")
        lines.append(_fenced(call.arguments_json(), "json"))
    if msg.stopped:
        lines.append("*Stopped by the user.*")
    return "\n\n".join(lines)


def _fenced(text: str, lang: str = "") -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "Chat"
