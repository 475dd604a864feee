"""Power-loss states of a folder, from a record of the file operations made in it.

:class:`Recorder` wraps the calls that change files (``os.open``/``write``/``ftruncate``/
``fsync``/``replace``/``rename``/``mkdir``/``unlink``, ``os.fdopen`` and ``io.open`` file
objects) while a workload runs against a real folder, and keeps, in order, what each did to
a path under that folder. Markers (:meth:`Recorder.mark`) note what the workload was told
was done (an acknowledged append), so each crash point knows what must survive.

:class:`DiskModel` replays the record the way a disk that loses power behaves (POSIX, no
more): a file's data is durable only once the file is fsynced; a new name, a rename or a
removal is durable only once its folder is fsynced. Until then each may or may not have
reached the disk, in any order, and a write may be cut short. :meth:`DiskModel.states`
gives states a crash could leave: all pending work lost, all of it done, and random
subsets (reordered, with torn writes).
"""

from __future__ import annotations

import builtins
import io
import os
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Op = tuple[Any, ...]
DIR = -1  # the inode number the model gives every folder


class _RecordedFile:
    """A file object whose writes are recorded (everything else is the real file's)."""

    def __init__(self, real: Any, path: str, recorder: Recorder) -> None:
        self._real = real
        self._path = path
        self._recorder = recorder

    def write(self, data: Any) -> int:
        raw = data.encode(self._real.encoding) if isinstance(data, str) else bytes(data)
        offset = self._real.tell()
        written: int = self._real.write(data)
        self._recorder.ops.append(("write", self._path, offset, raw))
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __enter__(self) -> _RecordedFile:
        return self

    def close(self) -> None:
        if not self._real.closed:
            self._recorder._fds.pop(self._real.fileno(), None)
        self._real.close()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._real)


class Recorder:
    """Records what is done under ``root`` while :meth:`recording` is active."""

    def __init__(self, root: Path) -> None:
        self.root = os.path.realpath(root)
        self.ops: list[Op] = []
        self._fds: dict[int, str] = {}

    def mark(self, *what: Any) -> None:
        self.ops.append(("mark", *what))

    def _mine(self, path: Any) -> str | None:
        if isinstance(path, int):
            return None
        full = os.path.realpath(os.fspath(path))
        return full if full == self.root or full.startswith(self.root + os.sep) else None

    @contextmanager
    def recording(self) -> Iterator[Recorder]:
        real = {name: getattr(os, name) for name in (
            "open", "write", "ftruncate", "fsync", "replace", "rename", "mkdir", "unlink",
            "close", "fdopen",
        )}
        real_io_open = io.open
        ops = self.ops
        fds = self._fds

        def rec_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None) -> int:
            mine = self._mine(path)
            existed = mine is not None and os.path.lexists(mine)
            fd: int = real["open"](path, flags, mode, dir_fd=dir_fd)
            if mine is not None:
                fds[fd] = mine
                if not existed:
                    ops.append(("create", mine))
                elif flags & os.O_TRUNC:
                    ops.append(("truncate", mine, 0))
            return fd

        def rec_write(fd: int, data: Any) -> int:
            path = fds.get(fd)
            offset = 0
            if path:
                offset = os.fstat(fd).st_size if _appending(fd) else os.lseek(fd, 0, os.SEEK_CUR)
            written: int = real["write"](fd, data)
            if path:
                ops.append(("write", path, offset, bytes(memoryview(data)[:written])))
            return written

        def rec_ftruncate(fd: int, size: int) -> None:
            real["ftruncate"](fd, size)
            if path := fds.get(fd):
                ops.append(("truncate", path, size))

        def rec_fsync(fd: Any) -> None:
            number = fd if isinstance(fd, int) else fd.fileno()
            real["fsync"](number)
            if path := fds.get(number):
                ops.append(("fsync", path))

        def rec_rename(src: Any, dst: Any, **kw: Any) -> None:
            real["replace"](src, dst, **kw)
            a, b = self._mine(src), self._mine(dst)
            if a and b:
                ops.append(("rename", a, b))

        def rec_mkdir(path: Any, mode: int = 0o777, *, dir_fd: Any = None) -> None:
            real["mkdir"](path, mode, dir_fd=dir_fd)
            if mine := self._mine(path):
                ops.append(("mkdir", mine))

        def rec_unlink(path: Any, *, dir_fd: Any = None) -> None:
            real["unlink"](path, dir_fd=dir_fd)
            if mine := self._mine(path):
                ops.append(("unlink", mine))

        def rec_close(fd: int) -> None:
            fds.pop(fd, None)
            real["close"](fd)

        def rec_fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
            handle = real["fdopen"](fd, *args, **kwargs)
            path = fds.get(fd)
            return _RecordedFile(handle, path, self) if path else handle

        def rec_io_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            mine = self._mine(file)
            writing = any(c in mode for c in "wax+")
            existed = mine is not None and os.path.lexists(mine)
            handle = real_io_open(file, mode, *args, **kwargs)
            if mine is None or not writing:
                return handle
            fds[handle.fileno()] = mine
            if not existed:
                ops.append(("create", mine))
            elif "w" in mode:
                ops.append(("truncate", mine, 0))
            return _RecordedFile(handle, mine, self)

        patched: dict[str, Callable[..., Any]] = {
            "open": rec_open, "write": rec_write, "ftruncate": rec_ftruncate,
            "fsync": rec_fsync, "replace": rec_rename, "rename": rec_rename,
            "mkdir": rec_mkdir, "unlink": rec_unlink, "close": rec_close,
            "fdopen": rec_fdopen,
        }
        for name, fn in patched.items():
            setattr(os, name, fn)
        io.open = builtins.open = rec_io_open  # type: ignore[assignment]
        try:
            yield self
        finally:
            for name, fn in real.items():
                setattr(os, name, fn)
            io.open = builtins.open = real_io_open


def _appending(fd: int) -> bool:
    import fcntl

    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND)


@dataclass
class _Inode:
    durable: bytes = b""
    pending: list[Op] = field(default_factory=list)

    def content(self, ops: list[Op] | None = None, torn: float | None = None) -> bytes:
        data = bytearray(self.durable)
        chosen = self.pending if ops is None else ops
        for n, op in enumerate(chosen):
            if op[0] == "truncate":
                size = op[1]
                data[size:] = b"" if size <= len(data) else b"\0" * (size - len(data))
                continue
            _, offset, piece = op  # ("write", offset, data)
            if torn is not None and n == len(chosen) - 1:
                piece = piece[: int(len(piece) * torn)]
            if len(data) < offset:
                data.extend(b"\0" * (offset - len(data)))
            data[offset:offset + len(piece)] = piece
        return bytes(data)


class DiskModel:
    """What is on disk, durable and pending, as the record is replayed."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.inodes: dict[int, _Inode] = {}
        self.durable: dict[str, int] = {root: DIR}  # path -> inode (DIR for a folder)
        self.pending: list[Op] = []  # name changes not yet durable, in order
        self.names: dict[str, int] = {root: DIR}  # what the running program sees
        self.marks: list[Op] = []
        self._next = 0

    def apply(self, op: Op) -> None:
        kind = op[0]
        if kind == "mark":
            self.marks.append(op[1:])
        elif kind == "create":
            self._next += 1
            self.inodes[self._next] = _Inode()
            self._name_op(("link", op[1], self._next))
        elif kind == "mkdir":
            self._name_op(("link", op[1], DIR))
        elif kind == "unlink":
            self._name_op(("unlink", op[1]))
        elif kind == "rename":
            self._name_op(("rename", op[1], op[2], self.names.get(op[1])))
        elif kind in ("write", "truncate"):
            ino = self.names.get(op[1])
            if ino is not None and ino != DIR:
                self.inodes[ino].pending.append((kind, *op[2:]))
        elif kind == "fsync":
            ino = self.names.get(op[1])
            if ino == DIR:  # a folder: its name changes are durable
                keep = []
                for change in self.pending:
                    if _folder_of(change) == op[1]:
                        _rename_in(self.durable, change)
                    else:
                        keep.append(change)
                self.pending = keep
            elif ino is not None:
                inode = self.inodes[ino]
                inode.durable = inode.content()
                inode.pending = []

    def _name_op(self, change: Op) -> None:
        _rename_in(self.names, change)
        self.pending.append(change)

    def states(self, rng: random.Random, randoms: int) -> Iterator[tuple[str, dict[str, bytes]]]:
        """(what was kept, {relative path: content}) for crash states at this point."""
        yield "pending lost", self._state(names=[], files={})
        yield "pending all done", self._state(names=self.pending, files=None)
        for _ in range(randoms):
            names = [c for c in self.pending if rng.random() < 0.5]
            files: dict[int, tuple[list[Op], float | None]] = {}
            for ino, inode in self.inodes.items():
                chosen = [op for op in inode.pending if rng.random() < 0.5]
                files[ino] = (chosen, rng.random() if chosen and rng.random() < 0.5 else None)
            yield "random subset", self._state(names=names, files=files)

    def _state(
        self, names: list[Op], files: dict[int, tuple[list[Op], float | None]] | None
    ) -> dict[str, bytes]:
        table = dict(self.durable)
        for change in names:
            _rename_in(table, change)
        out: dict[str, bytes] = {}
        for path, ino in table.items():
            if ino == DIR or not _reachable(path, table, self.root):
                continue
            inode = self.inodes[ino]
            if files is None:
                data = inode.content()
            else:
                chosen, torn = files.get(ino, ([], None))
                data = inode.content(chosen, torn)
            out[os.path.relpath(path, self.root)] = data
        for path, ino in table.items():  # empty folders too
            if ino == DIR and path != self.root and _reachable(path, table, self.root):
                out.setdefault(os.path.relpath(path, self.root) + os.sep, b"")
        return out


def _folder_of(change: Op) -> str:
    return os.path.dirname(change[2] if change[0] == "rename" else change[1])


def _rename_in(table: dict[str, int], change: Op) -> None:
    if change[0] == "link":
        table[change[1]] = change[2]
    elif change[0] == "unlink":
        table.pop(change[1], None)
    elif change[0] == "rename":
        table.pop(change[1], None)
        if change[3] is not None:
            table[change[2]] = change[3]


def _reachable(path: str, table: dict[str, int], root: str) -> bool:
    parent = os.path.dirname(path)
    while parent != root:
        if table.get(parent) != DIR:
            return False
        parent = os.path.dirname(parent)
    return True


def materialize(state: dict[str, bytes], folder: Path) -> None:
    """Write a crash state into an empty ``folder``."""
    for rel, data in sorted(state.items()):
        target = folder / rel
        if rel.endswith(os.sep):
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
