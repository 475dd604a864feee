"""grep: lines matching an RE2 expression in workspace files, with a match cap, within the
walk budget and honouring Stop."""

from __future__ import annotations

import os
from typing import ClassVar

from pydantic import Field

from assistant.tools.base import FOLDER_ALIASES, Tool, ToolArgs, ToolContext, ToolLimits, ToolResult
from assistant.tools.fsaccess import read_fd
from assistant.tools.scan_pool import LineScan
from assistant.tools.search import LineSearcher, PatternError, SearchStopped
from assistant.tools.textio import NotTextError, clip_line, decode_text
from assistant.tools.walk import (
    GlobMatcher,
    WalkBudget,
    glob_matcher,
    walk_files,
    walk_note,
)


class GrepArgs(ToolArgs):
    aliases: ClassVar[dict[str, str]] = {
        "regex": "pattern", "query": "pattern", **FOLDER_ALIASES, "file": "path", "include": "glob"
    }

    pattern: str = Field(description="Regular expression (RE2 syntax) to search for.")
    path: str = Field(".", description="File or folder to search, relative to the workspace.")
    glob: str | None = Field(None, description="Only search files matching this glob, e.g. '*.py'.")
    ignore_case: bool = Field(False, description="Match without regard to case.")


class _Hits:
    def __init__(self, limits: ToolLimits) -> None:
        self.limits = limits
        self.lines: list[str] = []
        self.extra = 0
        self.skipped = 0

    def want(self) -> int:
        """How many more lines are shown (the rest are only counted)."""
        return max(0, self.limits.max_matches - len(self.lines))

    def add(self, shown: str, number: int, line: bytes) -> None:
        if len(self.lines) < self.limits.max_matches:
            text = line.decode("utf-8", errors="replace")
            self.lines.append(f"{shown}:{number}: {clip_line(text, self.limits.max_line_chars)}")
        else:
            self.extra += 1


class GrepTool(Tool[GrepArgs]):
    name = "grep"
    description = "Search workspace files for lines matching a regular expression."
    args_model = GrepArgs

    def run(self, args: GrepArgs, ctx: ToolContext) -> ToolResult:
        try:
            searcher = LineSearcher(args.pattern, ignore_case=args.ignore_case)
        except PatternError as exc:
            return ToolResult.error(str(exc))
        matcher = glob_matcher(args.glob) if args.glob else None
        limits = ctx.limits
        budget = limits.walk_budget(lambda: ctx.cancelled)
        hits = _Hits(limits)
        scan = LineScan(searcher, args.pattern, args.ignore_case)
        try:
            with ctx.workspace.open(args.path, "any") as target:
                if target.fd is not None:  # one file
                    self._search_fd(scan, target.fd, target.shown, hits, budget)
                else:
                    prefix = "" if target.shown == "." else target.shown + "/"
                    self._search_tree(scan, target.handle, prefix, matcher, hits, budget)
        except SearchStopped:
            return ToolResult.error("cancelled by the user")
        finally:
            scan.close()
        return ToolResult(_report(args.pattern, hits, budget))

    def _search_tree(self, scan: LineScan, top: int | str, prefix: str,
                     matcher: GlobMatcher | None, hits: _Hits, budget: WalkBudget) -> None:
        for file in walk_files(top, budget):
            if matcher is not None and not matcher.match(file.rel):
                continue
            try:
                fd = file.open()
            except OSError:
                hits.skipped += 1
                continue
            try:
                self._search_fd(scan, fd, prefix + file.shown, hits, budget)
            finally:
                os.close(fd)
            if budget.stopped_by:
                return

    def _search_fd(
        self, scan: LineScan, fd: int, shown: str, hits: _Hits, budget: WalkBudget
    ) -> None:
        limits = hits.limits
        try:
            size = os.fstat(fd).st_size
            if size > limits.max_file_bytes:
                hits.skipped += 1
                return
            data = read_fd(fd, limits.max_file_bytes)
        except OSError:
            hits.skipped += 1
            return
        try:
            decode_text(data, shown)
        except NotTextError:
            hits.skipped += 1
            return
        lines, more = scan.lines(data, hits.want(), budget)
        for number, line in lines:
            hits.add(shown, number, line)
        hits.extra += more


def _report(pattern: str, hits: _Hits, budget: WalkBudget) -> str:
    limits = hits.limits
    skipped = hits.skipped
    note = f" ({skipped:,} binary, non-UTF-8 or oversized files skipped)" if skipped else ""
    cut = walk_note(budget)
    if not hits.lines:
        return f"No matches for {pattern!r}{note}.{cut}"
    out = limits.clip("\n".join(hits.lines), "Output cut.")
    if hits.extra:
        out += (f"\n[{hits.extra:,} more matches not shown; narrow the pattern or the path, or "
                "read a file with read_file start_line/end_line.]")
    if note:
        out += f"\n[Note:{note}.]"
    return out + cut
