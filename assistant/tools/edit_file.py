"""edit_file: replace one exact, unique piece of text in a workspace file (needs approval);
retried with ``\\r\\n`` when the file has Windows line endings."""

from __future__ import annotations

import difflib
from typing import ClassVar

from pydantic import Field

from assistant.atomicfile import encode_text
from assistant.tools.base import FILE_ALIASES, Tool, ToolArgs, ToolContext, ToolResult
from assistant.tools.fsaccess import read_fd
from assistant.tools.textio import NotTextError, decode_text
from assistant.tools.workspace import FileTooLarge

PREVIEW_LINES = 80
#: Lines of a file compared with a missed ``old_text`` to show the nearest one (bounded so a
#: large file costs milliseconds).
NEAREST_SCAN_LINES = 5_000
#: How alike (difflib ratio, case ignored) a piece must be to be shown as the nearest.
NEAREST_MIN_RATIO = 0.6


class EditFileArgs(ToolArgs):
    aliases: ClassVar[dict[str, str]] = {
        **FILE_ALIASES, "old": "old_text", "new": "new_text", "old_string": "old_text",
        "new_string": "new_text", "search": "old_text", "replace": "new_text",
    }

    path: str = Field(description="File path relative to the workspace.")
    old_text: str = Field(description="Exact text to replace; must occur exactly once.")
    new_text: str = Field(description="Text to put in its place.")


class EditFileTool(Tool[EditFileArgs]):
    name = "edit_file"
    description = (
        "Replace text in a workspace file. old_text must match the file exactly, once; "
        "read the file first."
    )
    args_model = EditFileArgs
    needs_approval = True

    def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolResult:
        if not args.old_text:
            return ToolResult.error("old_text is empty; give the exact text to replace.")
        with ctx.workspace.open(args.path, "file") as opened:
            assert opened.fd is not None and opened.st is not None
            shown = opened.shown
            if opened.st.st_size > ctx.limits.max_file_bytes:
                raise FileTooLarge(shown, opened.st.st_size, ctx.limits.max_file_bytes)
            try:
                text = decode_text(read_fd(opened.fd, ctx.limits.max_file_bytes), shown)
            except NotTextError as exc:
                return ToolResult.error(str(exc))
            old, new = _match_newlines(text, args.old_text, args.new_text)
            count = text.count(old)
            if count == 0:
                return ToolResult.error(not_found_message(text, old, shown))
            if count > 1:
                return ToolResult.error(
                    f"old_text occurs {count} times in {shown}; include more of the "
                    "surrounding lines so it matches exactly once."
                )
            updated = text.replace(old, new, 1)
            # Written into the folder the file was read from, under the same name.
            ctx.workspace.replace_bytes(opened, encode_text(updated))
        line = text[: text.index(old)].count("\n") + 1
        return ToolResult(
            f"Edited {shown}: replaced {old.count(chr(10)) + 1} line(s) at line {line:,} "
            f"with {new.count(chr(10)) + 1} line(s)."
        )

    def describe(self, args: EditFileArgs, ctx: ToolContext) -> str:
        return f"Edit {args.path}"

    def preview(self, args: EditFileArgs, ctx: ToolContext) -> str:
        lines = list(difflib.unified_diff(args.old_text.splitlines(), args.new_text.splitlines(),
                                          "before", "after", lineterm=""))
        if len(lines) > PREVIEW_LINES:
            lines = [*lines[:PREVIEW_LINES], f"[... {len(lines) - PREVIEW_LINES} more lines]"]
        return "\n".join(lines)


def _match_newlines(text: str, old: str, new: str) -> tuple[str, str]:
    if old not in text and "\r\n" in text and "\r\n" not in old:
        crlf_old = old.replace("\n", "\r\n")
        if crlf_old in text:
            return crlf_old, new.replace("\r\n", "\n").replace("\n", "\r\n")
    return old, new


def not_found_message(text: str, old: str, shown: str) -> str:
    """Why ``old`` is not in ``text``, with the file's nearest piece to copy when there is one
    (small models guess the text from the request, e.g. ``port = 8080`` for ``PORT = 8080``;
    shown the real line, they copy it on the next call)."""
    message = (f"old_text was not found in {shown}. It must match exactly, including case, "
               "spaces and line breaks.")
    nearest = nearest_piece(text, old)
    if nearest is None:
        return message + " Read the file and copy the text."
    line, piece = nearest
    return (f"{message} The nearest text in the file (line {line:,}) is:\n{piece}\n"
            "Copy it exactly into old_text if that is the text to change.")


def nearest_piece(text: str, old: str) -> tuple[int, str] | None:
    """The run of ``len(old)``'s lines in ``text`` most like ``old`` (its 1-based line and
    text), if alike enough."""
    lines = text.splitlines()[:NEAREST_SCAN_LINES]
    size = max(1, len(old.strip("\n").splitlines()))
    if not lines or size > len(lines):
        return None
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(old.strip().lower())
    best: tuple[float, int] = (0.0, 0)
    for start in range(len(lines) - size + 1):
        matcher.set_seq1("\n".join(lines[start:start + size]).strip().lower())
        if matcher.real_quick_ratio() <= best[0] or matcher.quick_ratio() <= best[0]:
            continue
        ratio = matcher.ratio()
        if ratio > best[0]:
            best = (ratio, start)
    ratio, start = best
    if ratio < NEAREST_MIN_RATIO:
        return None
    return start + 1, "\n".join(lines[start:start + size])
