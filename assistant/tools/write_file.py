"""write_file: create or overwrite a text file in the workspace (needs approval)."""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field

from assistant.atomicfile import encode_text
from assistant.tools.base import FILE_ALIASES, Tool, ToolArgs, ToolContext, ToolResult

PREVIEW_CHARS = 2_000
#: What a write or an edit reports. Qwen2.5-Coder 0.5B, given "Created notes_copy.txt (3
#: lines, 99 characters).", wrote that sentence into the file as its next call (and
#: "Overwrote first.txt ..." into first.txt): a file is never meant to hold it.
TOOL_REPORT = re.compile(
    r"(?:Created|Overwrote) .+ \([\d,]+ lines, [\d,]+ characters\)\."
    r"|Edited .+: replaced [\d,]+ line\(s\) at line [\d,]+ with [\d,]+ line\(s\)\."
)


class WriteFileArgs(ToolArgs):
    aliases: ClassVar[dict[str, str]] = {
        **FILE_ALIASES, "text": "content", "contents": "content", "data": "content"
    }

    path: str = Field(description="File path relative to the workspace.")
    content: str = Field(description="The complete new content of the file.")


class WriteFileTool(Tool[WriteFileArgs]):
    name = "write_file"
    description = "Create a text file in the workspace, or replace all of its content."
    args_model = WriteFileArgs
    needs_approval = True

    def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        if len(args.content) > ctx.limits.max_write_chars:
            return ToolResult.error(
                f"The content is {len(args.content):,} characters; at most "
                f"{ctx.limits.max_write_chars:,} can be written at once."
            )
        if TOOL_REPORT.fullmatch(args.content.strip()):
            return ToolResult.error(
                f"Not written: the content is a tool's report of an earlier change, not text "
                f"for {args.path}, which is unchanged. If the user's request is done, answer "
                "the user in words now."
            )
        shown, existed = ctx.workspace.write_bytes(args.path, encode_text(args.content))
        lines = args.content.count("\n") + (0 if args.content.endswith("\n") else 1)
        if not args.content:
            lines = 0
        verb = "Overwrote" if existed else "Created"
        return ToolResult(f"{verb} {shown} ({lines:,} lines, {len(args.content):,} characters).")

    def describe(self, args: WriteFileArgs, ctx: ToolContext) -> str:
        return f"Write {len(args.content):,} characters to {args.path}"

    def preview(self, args: WriteFileArgs, ctx: ToolContext) -> str:
        if len(args.content) <= PREVIEW_CHARS:
            return args.content
        return args.content[:PREVIEW_CHARS] + f"\n[... {len(args.content) - PREVIEW_CHARS:,} more]"
