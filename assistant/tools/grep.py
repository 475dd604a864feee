"""grep: lines matching a regular expression in workspace files, with a match cap."""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field

from assistant.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from assistant.tools.textio import clip_line, looks_binary
from assistant.tools.walk import glob_matcher, walk_files


class GrepArgs(ToolArgs):
    aliases: ClassVar[dict[str, str]] = {
        "regex": "pattern",
        "query": "pattern",
        "dir": "path",
        "file": "path",
        "include": "glob",
    }

    pattern: str = Field(description="Python regular expression to search for.")
    path: str = Field(".", description="File or folder to search, relative to the workspace.")
    glob: str | None = Field(None, description="Only search files matching this glob, e.g. '*.py'.")
    ignore_case: bool = Field(False, description="Match without regard to case.")


class GrepTool(Tool[GrepArgs]):
    name = "grep"
    description = "Search workspace files for lines matching a regular expression."
    args_model = GrepArgs

    def run(self, args: GrepArgs, ctx: ToolContext) -> ToolResult:
        try:
            regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except re.error as exc:
            return ToolResult.error(
                f"The pattern is not a valid regular expression ({exc}). Escape special "
                "characters such as ( [ . * with a backslash."
            )
        target = ctx.workspace.resolve(args.path)
        files = [target] if target.is_file() else list(walk_files(target))
        matcher = glob_matcher(args.glob) if args.glob else None
        limits = ctx.limits
        hits: list[str] = []
        extra = 0
        skipped = 0
        for file in files:
            if ctx.cancelled:
                return ToolResult.error("cancelled by the user")
            shown = ctx.workspace.display(file)
            if (
                matcher is not None
                and file != target
                and not matcher.match(file.relative_to(target).as_posix())
            ):
                continue
            try:
                if file.stat().st_size > limits.max_file_bytes or looks_binary(file):
                    skipped += 1
                    continue
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                skipped += 1
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if regex.search(line):
                    if len(hits) < limits.max_matches:
                        hits.append(f"{shown}:{number}: {clip_line(line, limits.max_line_chars)}")
                    else:
                        extra += 1
        note = f" ({skipped:,} binary, non-UTF-8 or oversized files skipped)" if skipped else ""
        if not hits:
            return ToolResult(f"No matches for {args.pattern!r}{note}.")
        out = "\n".join(hits)
        if len(out) > limits.max_output_chars:
            out = out[: limits.max_output_chars] + "\n[Output cut.]"
        if extra:
            out += (
                f"\n[{extra:,} more matches not shown; narrow the pattern or the path, or read "
                "a file with read_file start_line/end_line.]"
            )
        if note:
            out += f"\n[Note:{note}.]"
        return ToolResult(out)
