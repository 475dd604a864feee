"""The workspace folder: the only place tools may read and write. Paths are checked here and
opened through :mod:`assistant.tools.fsaccess`, so a path swapped for a symlink cannot
lead outside; refusals are :class:`SandboxError`, written for the model."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from assistant.atomicfile import write_in
from assistant.tools.fsaccess import (
    Mode,
    PathProblem,
    Resolved,
    Resolver,
    read_fd,
    split_parts,
)

#: Longest path accepted, and longest single name in it (common filesystem limits).
MAX_PATH_CHARS = 1024
MAX_NAME_CHARS = 255

_WINDOWS_DEVICES = {
    "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$",
    *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10)),
}

Kind = Literal["file", "dir", "any"]


class SandboxError(ValueError):
    """A path the tools must not touch (the message explains why, for the model)."""


class Workspace:
    """A folder the tools are confined to. Created on demand."""

    def __init__(self, root: Path | str) -> None:
        self._given = Path(root).expanduser()
        self._root: Path | None = None
        self._resolver: Resolver | None = None

    @property
    def root(self) -> Path:
        """The canonical root folder (created the first time it is needed)."""
        if self._root is None:
            self._given.mkdir(parents=True, exist_ok=True)
            self._root = Path(os.path.realpath(self._given))
        return self._root

    def _walker(self) -> Resolver:
        if self._resolver is None:
            root = str(self.root)
            given = os.path.normpath(os.path.abspath(self._given))
            aliases = (root,) if given == root else (root, given)
            self._resolver = Resolver(root, aliases)
        return self._resolver

    # -- opening ---------------------------------------------------------------------------
    @contextmanager
    def open(self, path: str, mode: Mode = "any", *, create: bool = False) -> Iterator[Resolved]:
        """Open ``path`` for a tool: ``file`` an open file (``fd``), ``dir`` a folder (``handle``),
        ``any`` either, ``parent`` the folder a file of that name goes in (made with ``create``)."""
        parts = self._parts(path)
        try:
            resolved = self._walker().resolve(parts, mode, create=create)
        except PathProblem as problem:
            raise SandboxError(self._message(path, problem)) from None
        except OSError as exc:
            raise SandboxError(f"{path!r} cannot be accessed: {exc.strerror or exc}.") from None
        if mode == "dir" and not resolved.is_dir:  # pragma: no cover - the walk ensures it
            resolved.close()
            raise SandboxError(f"{resolved.shown!r} is a file, not a directory; use read_file.")
        try:
            yield resolved
        finally:
            resolved.close()

    def read_bytes(self, path: str, max_bytes: int) -> tuple[bytes, str]:
        """A file's bytes and how it is shown; refused when larger than ``max_bytes``."""
        with self.open(path, "file") as opened:
            assert opened.fd is not None and opened.st is not None
            if opened.st.st_size > max_bytes:
                raise FileTooLarge(opened.shown, opened.st.st_size, max_bytes)
            return read_fd(opened.fd, max_bytes), opened.shown

    def write_bytes(self, path: str, data: bytes) -> tuple[str, bool]:
        """Create or replace a file through a temporary file renamed into place (folders made as
        needed); returns (how it is shown, whether it existed)."""
        with self.open(path, "parent", create=True) as place:
            self.replace_bytes(place, data)
            return place.shown, place.st is not None

    def replace_bytes(self, place: Resolved, data: bytes) -> None:
        """Write ``data`` as the file ``place`` names, keeping an existing file's permissions."""
        assert place.name is not None
        mode = stat.S_IMODE(place.st.st_mode) if place.st is not None else None
        try:
            write_in(place.handle, place.name, data, mode)
        except IsADirectoryError:  # a folder took the name meanwhile
            shown = place.shown
            raise SandboxError(f"{shown!r} is a directory, not a file; use list_dir.") from None

    def resolve(self, path: str, *, kind: Kind = "any") -> Path:
        """Where ``path`` leads under the root (for showing and comparing paths only)."""
        with self.open(path, kind) as found:
            return self.root.joinpath(*found.parts, *([found.name] if found.name else []))

    def display(self, path: Path) -> str:
        """``path`` relative to the root, with forward slashes ("." for the root)."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return rel.as_posix() or "."

    # -- checks and messages ---------------------------------------------------------------
    def _parts(self, path: str) -> list[str]:
        if not isinstance(path, str):
            raise SandboxError("The path must be a string.")
        raw = path.strip() or "."
        if "\x00" in raw:
            raise SandboxError("The path contains a NUL byte; paths cannot contain one.")
        if len(raw) > MAX_PATH_CHARS:
            raise SandboxError(f"The path is longer than {MAX_PATH_CHARS} characters.")
        for part in Path(raw).parts:
            if len(part) > MAX_NAME_CHARS:
                raise SandboxError(
                    f"A name in the path is longer than {MAX_NAME_CHARS} characters."
                )
            if os.name == "nt" and _is_windows_device(part):
                raise SandboxError(f"{path!r} names a device, not a file.")
        if os.path.isabs(raw):
            inside = self._walker().relative_parts(raw)
            if inside is None:
                raise SandboxError(self._outside(path))
            return inside
        return split_parts(raw)

    def _outside(self, path: str) -> str:
        return (
            f"{path!r} is outside the workspace. Tools can only use files inside the "
            f"workspace folder ({self.root}); use a path relative to it, like 'notes.txt'."
        )

    def _message(self, path: str, problem: PathProblem) -> str:
        shown = problem.shown
        messages = {
            "outside": self._outside(path),
            "link_outside": f"{path!r} is outside the workspace: {shown!r} is a link to "
            f"{problem.detail}. Tools can only use files inside the workspace folder "
            f"({self.root}).",
            "missing": f"{shown!r} does not exist in the workspace. Use list_dir or find_files "
            "to see what is there.",
            "is_dir": f"{shown!r} is a directory, not a file; use list_dir.",
            "not_dir": f"{shown!r} is a file, not a directory; use read_file.",
            "special": f"{shown!r} is not a regular file or directory (a device, pipe or "
            "socket); tools do not open those.",
            "loop": f"{path!r} goes through too many links in a row (a link loop?).",
            "changing": f"{path!r} kept changing while it was being opened; try again.",
        }
        default = f"{path!r} cannot be accessed: {problem.detail or 'permission denied'}."
        return messages.get(problem.kind, default)


class FileTooLarge(SandboxError):
    """A file larger than a tool reads (the message suggests grep)."""

    def __init__(self, shown: str, size: int, limit: int) -> None:
        self.shown = shown
        self.size = size
        self.limit = limit
        super().__init__(
            f"{shown} is {size:,} bytes, more than the {limit:,} the tools read; "
            "use grep to find the lines you need."
        )


def _is_windows_device(part: str) -> bool:
    stem = part.split(".", 1)[0].rstrip(" ").upper()
    return stem in _WINDOWS_DEVICES
