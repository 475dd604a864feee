"""The workspace folder: the only place tools may read and write.

Every path a tool receives goes through :meth:`Workspace.resolve`. It is joined to the
workspace root (absolute paths are taken as given), made canonical with
:func:`os.path.realpath` (which follows symlinks and folds ``..``), and refused unless the
result is the root or inside it. NUL bytes, over-long names, and existing paths that are
neither a regular file nor a directory (devices, FIFOs, sockets) are refused too. A refusal
is a :class:`SandboxError` whose message is written for the model; the registry turns it
into an error result.

The check happens just before use; a symlink swapped in between (a race with another local
program) is outside this threat model, which is a model making mistakes, not a local
attacker.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

#: Longest path accepted, and longest single name in it (common filesystem limits).
MAX_PATH_CHARS = 1024
MAX_NAME_CHARS = 255

_WINDOWS_DEVICES = {
    "CON",
    "PRN",
    "AUX",
    "NUL",
    "CONIN$",
    "CONOUT$",
    *(f"COM{i}" for i in range(1, 10)),
    *(f"LPT{i}" for i in range(1, 10)),
}

Kind = Literal["file", "dir", "any"]


class SandboxError(ValueError):
    """A path the tools must not touch (the message explains why, for the model)."""


class Workspace:
    """A folder the tools are confined to. Created on demand."""

    def __init__(self, root: Path | str) -> None:
        self._given = Path(root).expanduser()
        self._root: Path | None = None

    @property
    def root(self) -> Path:
        """The canonical root folder (created the first time it is needed)."""
        if self._root is None:
            self._given.mkdir(parents=True, exist_ok=True)
            self._root = Path(os.path.realpath(self._given))
        return self._root

    def resolve(self, path: str, *, kind: Kind = "any", must_exist: bool = True) -> Path:
        """The canonical path for ``path``, or :class:`SandboxError`.

        ``kind`` says what an existing path must be; ``must_exist=False`` allows a path that
        does not exist yet (for writing).
        """
        if not isinstance(path, str):
            raise SandboxError("The path must be a string.")
        raw = path.strip() or "."
        if "\x00" in raw:
            raise SandboxError("The path contains a NUL byte; paths cannot contain one.")
        if len(raw) > MAX_PATH_CHARS:
            raise SandboxError(f"The path is longer than {MAX_PATH_CHARS} characters.")
        parts = Path(raw).parts
        for part in parts:
            if len(part) > MAX_NAME_CHARS:
                raise SandboxError(
                    f"A name in the path is longer than {MAX_NAME_CHARS} characters."
                )
        if os.name == "nt" and any(_is_windows_device(p) for p in parts):
            raise SandboxError(f"{path!r} names a device, not a file.")
        root = self.root
        candidate = Path(os.path.realpath(root / raw))
        if not _is_within(candidate, root):
            raise SandboxError(
                f"{path!r} is outside the workspace. Tools can only use files inside the "
                f"workspace folder ({root}); use a path relative to it, like 'notes.txt'."
            )
        try:
            st = candidate.stat()
        except FileNotFoundError:
            if must_exist:
                raise SandboxError(
                    f"{self.display(candidate)!r} does not exist in the workspace. "
                    "Use list_dir or find_files to see what is there."
                ) from None
            return candidate
        except OSError as exc:
            raise SandboxError(f"{path!r} cannot be accessed: {exc.strerror or exc}.") from None
        if stat.S_ISDIR(st.st_mode):
            if kind == "file":
                raise SandboxError(
                    f"{self.display(candidate)!r} is a directory, not a file; use list_dir."
                )
        elif stat.S_ISREG(st.st_mode):
            if kind == "dir":
                raise SandboxError(
                    f"{self.display(candidate)!r} is a file, not a directory; use read_file."
                )
        else:
            raise SandboxError(
                f"{self.display(candidate)!r} is not a regular file or directory "
                "(a device, pipe or socket); tools do not open those."
            )
        return candidate

    def display(self, path: Path) -> str:
        """``path`` relative to the root, with forward slashes ("." for the root)."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return str(path)
        text = rel.as_posix()
        return text if text else "."


def _is_within(path: Path, root: Path) -> bool:
    a = os.path.normcase(str(path))
    b = os.path.normcase(str(root))
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep)


def _is_windows_device(part: str) -> bool:
    stem = part.split(".", 1)[0].rstrip(" ").upper()
    return stem in _WINDOWS_DEVICES
