"""Walking a workspace folder for find_files and grep without following symlinks, within a
budget, and glob patterns as RE2 (docs/ARCHITECTURE.md, "Tool safety beyond paths")."""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import re2

from assistant.textsafe import shown_name
from assistant.tools.fsaccess import Handle, close, iter_dir, open_dir_at, open_file_at
from assistant.tools.search import SearchStopped, re2_reason
from assistant.tools.workspace import SandboxError

#: Folders that are almost never what the user means and can be huge.
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".tox",
})
#: Longest glob accepted.
MAX_GLOB_CHARS = 1_000
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclass
class WalkBudget:
    """Caps on one search: entries visited, folder depth, wall time; and the Stop flag."""

    max_entries: int = 200_000
    max_depth: int = 64
    seconds: float = 30.0
    cancelled: Callable[[], bool] = lambda: False
    started: float = field(default_factory=time.monotonic)
    entries: int = 0
    #: Why the walk ended early ("" if it did not), for the tool's note.
    stopped_by: str = ""
    skipped_deep: int = 0

    def check(self) -> bool:
        """Count one step; False when the search must end (raises on Stop)."""
        if self.cancelled():
            raise SearchStopped
        if self.stopped_by:
            return False
        self.entries += 1
        if self.entries > self.max_entries:
            self.stopped_by = f"it visited {self.max_entries:,} entries"
            return False
        return not self.over_time()

    def over_time(self) -> bool:
        if time.monotonic() - self.started > self.seconds:
            self.stopped_by = f"it ran for {self.seconds:g} seconds"
        return bool(self.stopped_by)


@dataclass(frozen=True)
class WalkedFile:
    """A regular file found by the walk; open it with :meth:`open` while the walk is at it."""

    folder: Handle
    name: str
    #: Path relative to the folder the walk started in, '/'-separated, as on disk.
    rel: str

    @property
    def shown(self) -> str:
        """``rel`` as tools show it (bytes that are not UTF-8 as ``\\xHH``)."""
        return shown_name(self.rel)

    def open(self) -> int:
        fd = open_file_at(self.folder, self.name, os.O_RDONLY | _NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file")
        return fd


def walk_files(top: Handle, budget: WalkBudget) -> Iterator[WalkedFile]:
    """Regular files under the open folder ``top``: a folder's files by name, then its folders."""
    stack: list[tuple[Handle, str, Iterator[str]]] = []
    try:
        files, dirs = _entries(top, budget)
        yield from (WalkedFile(top, name, name) for name in files)
        stack.append((top, "", iter(dirs)))
        while stack:
            handle, prefix, pending = stack[-1]
            name = next(pending, None)
            if name is None:
                stack.pop()
                if handle != top:
                    close(handle)
                continue
            if not budget.check():
                return
            if len(stack) > budget.max_depth:
                budget.skipped_deep += 1
                continue
            try:
                sub = open_dir_at(handle, name)
            except OSError:  # swapped for a symlink or removed meanwhile: skip it
                continue
            rel = f"{prefix}{name}/"
            try:
                files, dirs = _entries(sub, budget)
            except OSError:
                close(sub)
                continue
            stack.append((sub, rel, iter(dirs)))
            yield from (WalkedFile(sub, f, rel + f) for f in files)
    finally:
        for handle, _prefix, _pending in stack:
            if handle != top:
                close(handle)


def _entries(handle: Handle, budget: WalkBudget) -> tuple[list[str], list[str]]:
    files: list[str] = []
    dirs: list[str] = []
    for entry in iter_dir(handle):
        if not budget.check():
            break
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_DIRS:
                    dirs.append(entry.name)
            elif entry.is_file(follow_symlinks=False):
                files.append(entry.name)
        except OSError:
            continue
    return files, dirs


def glob_to_regex(pattern: str) -> str:
    """A glob over relative paths as RE2: ``*`` and ``?`` stay in one folder, ``**`` spans them."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            close_at = pattern.find("]", i + 2)
            if close_at == -1:
                out.append(re2.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : close_at]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = close_at + 1
        else:
            out.append(re2.escape(ch))
            i += 1
    return "".join(out)


class GlobMatcher:
    """A compiled glob: :meth:`match` says whether a relative path matches all of it."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        if len(pattern) > MAX_GLOB_CHARS:
            raise SandboxError(f"The pattern is longer than {MAX_GLOB_CHARS:,} characters.")
        options = re2.Options()
        options.log_errors = False
        options.dot_nl = True
        options.case_sensitive = os.name != "nt"
        try:
            self._regex = re2.compile(glob_to_regex(pattern), options)
        except re2.error as exc:
            raise SandboxError(
                f"The pattern {pattern!r} is not a valid glob ({re2_reason(exc)}); use * and "
                "? for names, ** for any folders, [abc] for one of some characters."
            ) from None

    def match(self, rel: str) -> bool:
        """Whether ``rel`` (as the walk found it) matches; a name that is not UTF-8 is matched
        as tools show it (``caf\\xe9.txt``: ``*.txt`` matches it)."""
        return self._regex.fullmatch(shown_name(rel)) is not None


def glob_matcher(pattern: str) -> GlobMatcher:
    """Patterns without a '/' match a name in any folder (``*.py``); others the relative path."""
    if "/" not in pattern:
        pattern = "**/" + pattern
    return GlobMatcher(pattern)


def walk_note(budget: WalkBudget) -> str:
    """A bracketed note saying where a search was cut short ("" if it was not)."""
    notes: list[str] = []
    if budget.stopped_by:
        notes.append(
            f"The search stopped early because {budget.stopped_by}; results may be "
            "incomplete. Search a smaller folder (path) or use a narrower pattern."
        )
    if budget.skipped_deep:
        notes.append(
            f"{budget.skipped_deep:,} folders deeper than {budget.max_depth} levels were not "
            "searched."
        )
    return "\n[" + " ".join(notes) + "]" if notes else ""
