"""Writing a whole file so that a failure or a power loss never leaves it empty or half
written (docs/ARCHITECTURE.md, "Files written whole")."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter

T = TypeVar("T")


def encode_text(text: str) -> bytes:
    """UTF-8, with unencodable characters escaped as ``\\uXXXX`` instead of failing."""
    return text.encode("utf-8", errors="backslashreplace")


def write_atomically(path: Path, content: str | bytes, *, mode: int | None = None) -> Path:
    """Replace ``path`` (a symlink's target) with ``content`` in one rename, keeping its
    permissions (a new file: ``mode``, or the umask's); raises ``OSError``, target unchanged."""
    data = encode_text(content) if isinstance(content, str) else content
    target = Path(os.path.realpath(path))
    folder = target.parent
    if target.is_dir():
        raise IsADirectoryError(f"{path} is a folder; choose a file name")
    if not folder.is_dir():
        raise FileNotFoundError(f"the folder {folder} does not exist")
    if mode is None:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = None  # a new file: 0o666 minus the umask, applied by open()
    write_in(str(folder), target.name, data, mode)
    return target


def write_in(folder: int | str, name: str, data: bytes, mode: int | None) -> None:
    """Write ``data`` to a new temporary file in ``folder`` (an open descriptor, which no
    swapped link leads out of, or a path) and rename it over ``name``, with ``mode`` (None:
    the umask's); raises ``OSError``, ``name`` unchanged."""
    dir_fd = folder if isinstance(folder, int) else None
    base = "" if dir_fd is not None else str(folder)
    fd, tmp = _create_temp(base, dir_fd, name, 0o666 if mode is None else mode & 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            if mode is not None and hasattr(os, "fchmod"):
                with contextlib.suppress(OSError):
                    os.fchmod(fh.fileno(), mode)
        os.replace(tmp, os.path.join(base, name), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    if dir_fd is None:
        fsync_dir(Path(base))
    else:
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)


class JsonStore:
    """Values under string keys in one JSON file; missing or unreadable reads as empty (a cache)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return raw if isinstance(raw, dict) else {}

    def get_as(self, key: str, adapter: TypeAdapter[T]) -> T | None:
        """The value under ``key`` checked by ``adapter`` (None: missing or not valid)."""
        raw = self.read().get(key)
        if not isinstance(raw, dict):
            return None
        try:
            return adapter.validate_python(raw)
        except ValueError:
            return None

    def put_json(self, key: str, value: Any) -> None:
        data = self.read()
        data[key] = value
        make_dirs(self.path.parent)
        write_atomically(self.path, json.dumps(data, indent=1))


def make_dirs(directory: Path) -> None:
    """``mkdir -p`` whose new folders survive a power loss (their parents are fsynced)."""
    missing: list[Path] = []
    current = Path(os.path.abspath(directory))
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # made by someone else meanwhile: theirs to sync
        fsync_dir(folder)
        fsync_dir(folder.parent)


def replace_durably(src: Path, dest: Path) -> None:
    """``os.replace`` then an fsync of both names' folders (``src``'s data must be on disk)."""
    os.replace(src, dest)
    fsync_dir(dest.parent)
    if os.path.realpath(src.parent) != os.path.realpath(dest.parent):
        fsync_dir(src.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _create_temp(folder: str, dir_fd: int | None, name: str, mode: int) -> tuple[int, str]:
    """A new, empty temporary file beside ``name`` (created exclusively)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".{name[:200]}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, mode, dir_fd=dir_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot create a temporary file in {folder}")
