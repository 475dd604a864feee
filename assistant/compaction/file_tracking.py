"""Files read and modified, taken from tool calls (not from the model's summary).
More in docs/COMPACTION.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from assistant.conversation import Message, ToolCall

READ_TOOLS = frozenset(
    {"read_file", "read", "Read", "view", "View", "cat", "open_file", "read_files", "ReadFile"}
)
WRITE_TOOLS = frozenset(
    {
        "write_file", "edit_file", "write", "Write", "edit", "Edit", "MultiEdit", "multi_edit",
        "create_file", "str_replace", "str_replace_editor", "apply_patch", "replace_in_file",
        "insert", "patch", "WriteFile", "EditFile", "NotebookEdit",
    }
)
PATH_KEYS = (
    "path", "file_path", "filePath", "file", "filename", "target_file", "notebook_path",
    "absolute_path",
)


#: What a call that names no file works on: a search pattern, a command, an address.
OTHER_TARGET_KEYS = ("pattern", "glob", "query", "command", "cmd", "url")


@dataclass(frozen=True)
class CallTarget:
    """What one tool call works on: a file path, or (``is_path`` false) a pattern, command
    or address; the one place that decides it."""

    text: str
    is_path: bool


def call_target(call: ToolCall) -> CallTarget | None:
    for key in (*PATH_KEYS, *OTHER_TARGET_KEYS):
        value = call.arguments.get(key)
        if isinstance(value, str) and value.strip():
            return CallTarget(value.strip(), key in PATH_KEYS)
    return None


@dataclass
class FileOps:
    """Ordered, de-duplicated file lists (first seen first)."""

    read: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)


def extract_file_ops(messages: Sequence[Message], previous: FileOps | None = None) -> FileOps:
    """File operations in ``messages`` added to ``previous`` (cumulative); a file both read
    and modified is listed as modified."""
    read = list(previous.read) if previous is not None else []
    modified = list(previous.modified) if previous is not None else []
    errors = {m.tool_call_id for m in messages if m.role == "tool" and m.is_error}
    for msg in messages:
        if msg.role != "assistant":
            continue
        for call in msg.tool_calls:
            target = call_target(call)
            if target is None or not target.is_path or call.id in errors:
                continue
            if call.name in READ_TOOLS:
                read.append(target.text)
            elif call.name in WRITE_TOOLS:
                modified.append(target.text)
    modified = list(dict.fromkeys(modified))
    return FileOps([p for p in dict.fromkeys(read) if p not in modified], modified)
