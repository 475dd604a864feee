"""Walking the workspace for find_files and grep: no symlinked folders, no tool caches."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

#: Folders that are almost never what the user means and can be huge.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)


def walk_files(top: Path) -> Iterator[Path]:
    """Regular files under ``top`` in a stable order.

    Symlinks (to files or folders) are skipped, so nothing outside the workspace is reached
    through one, and neither are devices, FIFOs or sockets (reading a FIFO would block).
    """
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode):
                yield path


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """A glob over '/'-separated relative paths: ``*`` and ``?`` stay in one folder,
    ``**`` spans folders (``**/`` also matches no folder), ``[...]`` is a class."""
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
            close = pattern.find("]", i + 2)
            if close == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : close]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = close + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out) + r"\Z", re.IGNORECASE if os.name == "nt" else 0)


def glob_matcher(pattern: str) -> re.Pattern[str]:
    """Patterns without a '/' match a file's name in any folder (``*.py``); others match
    the path relative to the search folder (``src/**/*.py``)."""
    if "/" not in pattern:
        pattern = "**/" + pattern
    return glob_to_regex(pattern)
