"""read_file: a text file from the workspace, optionally a line range, capped in size."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from assistant.tools.base import FILE_ALIASES, Tool, ToolArgs, ToolContext, ToolResult
from assistant.tools.textio import NotTextError, read_text


class ReadFileArgs(ToolArgs):
    aliases: ClassVar[dict[str, str]] = {
        **FILE_ALIASES, "start": "start_line", "end": "end_line", "offset": "start_line"
    }

    path: str = Field(description="File path relative to the workspace.")
    # Qwen2.5-Coder 0.5B filled both for a 4-line file (lines 1-3), then went looking for
    # the line it had left out with every other tool.
    start_line: int | None = Field(None, ge=1, description=(
        "Leave out to read the whole file. Only for the rest of a long file that was cut: "
        "the first line to read (1-based)."))
    end_line: int | None = Field(None, ge=1, description=(
        "Leave out to read to the end. The last line to read (inclusive)."))


class ReadFileTool(Tool[ReadFileArgs]):
    name = "read_file"
    description = (
        "Read a whole text file in the workspace. A long file is cut; a note then says how "
        "to read the rest with start_line."
    )
    args_model = ReadFileArgs

    def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        try:
            text, shown = read_text(ctx.workspace, args.path, max_bytes=ctx.limits.max_file_bytes)
        except NotTextError as exc:
            return ToolResult.error(str(exc))
        lines = text.splitlines()
        total = len(lines)
        if total == 0:
            return ToolResult(f"{shown} is empty.")
        start = args.start_line or 1
        end = min(args.end_line or total, total)
        if start > total:
            return ToolResult.error(
                f"{shown} has {total:,} lines; start_line {start:,} is past the end."
            )
        if end < start:
            return ToolResult.error("end_line must not be smaller than start_line.")
        return ToolResult(_render(shown, lines, start, end, ctx.limits.max_output_chars))


def _render(shown: str, lines: list[str], start: int, end: int, cap: int) -> str:
    total = len(lines)
    out: list[str] = []
    used = 0
    last = start - 1
    for number in range(start, end + 1):
        line = lines[number - 1]
        if used + len(line) + 1 > cap:
            if not out:  # one line longer than the whole cap
                out.append(line[:cap])
                out.append(
                    f"[Line {number:,} is {len(line):,} characters; only the first "
                    f"{cap:,} are shown.]"
                )
                last = number
            break
        out.append(line)
        used += len(line) + 1
        last = number
    whole = start == 1 and last == total
    cut = last < end
    header = (
        f"{shown} ({total:,} lines)"
        if whole
        else (f"{shown} (lines {start:,}-{last:,} of {total:,}"
              f"{', cut to fit: see the note at the end' if cut else ''})")
    )
    body = "\n".join(out)
    if cut:
        body += (
            f"\n[Truncated: showing lines {start:,}-{last:,} of {total:,}, because one read "
            f"shows at most {cap:,} characters (its share of the model's context window). "
            f"To read the rest: /read {shown} {last + 1}-{end}, or call read_file with "
            f"path={shown!r}, start_line={last + 1}"
            f"{f', end_line={end}' if end < total else ''}.]"
        )
    elif last < total and not whole:
        body += f"\n[{total - last:,} more lines after line {last:,}.]"
    return f"{header}\n{body}"
