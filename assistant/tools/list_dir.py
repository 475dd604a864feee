"""list_dir: the entries of one workspace folder, folders first, with file sizes."""

from __future__ import annotations

import os
from typing import ClassVar

from pydantic import Field

from assistant.textsafe import shown_name
from assistant.tools.base import FOLDER_ALIASES, Tool, ToolArgs, ToolContext, ToolResult
from assistant.tools.fsaccess import Handle, readlink_at, scandir


class ListDirArgs(ToolArgs):
    aliases: ClassVar[dict[str, str]] = {**FOLDER_ALIASES, "folder": "path"}

    path: str = Field(".", description="Folder relative to the workspace ('.' is the top).")


class ListDirTool(Tool[ListDirArgs]):
    name = "list_dir"
    description = "List the files and folders in a workspace folder."
    args_model = ListDirArgs

    def run(self, args: ListDirArgs, ctx: ToolContext) -> ToolResult:
        with ctx.workspace.open(args.path, "dir") as folder:
            shown = folder.shown
            entries = sorted(scandir(folder.handle), key=lambda e: (not _is_dir(e), e.name.lower()))
            if not entries:
                return ToolResult(f"{shown}/ is empty.")
            cap = ctx.limits.max_entries
            lines = [f"{shown}/ ({len(entries):,} entries)"]
            for entry in entries[:cap]:
                lines.append(_describe(folder.handle, entry))
        if len(entries) > cap:
            lines.append(
                f"[{len(entries) - cap:,} more entries not shown; use find_files with a "
                "pattern to narrow the list.]"
            )
        listing = "\n".join(lines)
        return ToolResult(
            ctx.limits.clip(listing, "Listing cut; use find_files with a pattern to narrow it.")
        )


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _describe(folder: Handle, entry: os.DirEntry[str]) -> str:
    name = shown_name(entry.name)  # a name that is not UTF-8 with \xHH escapes
    try:
        if entry.is_symlink():
            return f"{name} -> {shown_name(readlink_at(folder, entry.name))}"
        if entry.is_dir(follow_symlinks=False):
            return f"{name}/"
        if entry.is_file(follow_symlinks=False):
            return f"{name} ({_size(entry.stat(follow_symlinks=False).st_size)})"
    except OSError:
        pass
    return f"{name} (special file)"


def _size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size):,} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # pragma: no cover
