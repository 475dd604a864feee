"""find_files: workspace files whose path matches a glob pattern."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from assistant.tools.base import FOLDER_ALIASES, Tool, ToolArgs, ToolContext, ToolResult
from assistant.tools.search import SearchStopped
from assistant.tools.walk import glob_matcher, walk_files, walk_note
from assistant.tools.workspace import SandboxError


class FindFilesArgs(ToolArgs):
    aliases: ClassVar[dict[str, str]] = {**FOLDER_ALIASES, "glob": "pattern", "name": "pattern"}

    pattern: str = Field(description="Glob such as '*.py' or 'docs/**/*.md'.")
    path: str = Field(".", description="Folder to search in, relative to the workspace.")


class FindFilesTool(Tool[FindFilesArgs]):
    name = "find_files"
    description = "Find workspace files by name with a glob pattern ('*.txt', 'src/**/*.py')."
    args_model = FindFilesArgs

    def run(self, args: FindFilesArgs, ctx: ToolContext) -> ToolResult:
        pattern = args.pattern.strip().replace("\\", "/")
        if not pattern:
            return ToolResult.error("The pattern is empty; try '*' or '*.txt'.")
        if "\x00" in pattern:
            raise SandboxError("The pattern contains a NUL byte.")
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise SandboxError(
                "The pattern must be relative to the workspace and cannot contain '..'."
            )
        matcher = glob_matcher(pattern.removeprefix("./"))
        budget = ctx.limits.walk_budget(lambda: ctx.cancelled)
        found: list[str] = []
        more = 0
        with ctx.workspace.open(args.path, "dir") as top:
            prefix = "" if top.shown == "." else top.shown + "/"
            try:
                for file in walk_files(top.handle, budget):
                    if matcher.match(file.rel):
                        if len(found) < ctx.limits.max_matches:
                            found.append(prefix + file.shown)
                        else:
                            more += 1
            except SearchStopped:
                return ToolResult.error("cancelled by the user")
            where = top.shown
        note = walk_note(budget)
        if not found:
            return ToolResult(f"No files match {args.pattern!r} in {where}.{note}")
        text = "\n".join(found)
        if more:
            text += f"\n[{more:,} more files match; use a narrower pattern or path.]"
        text = ctx.limits.clip(text, "List cut; use a narrower pattern.")
        return ToolResult(text + note)
