"""Opening workspace paths one component at a time from a descriptor of the root, so no
racing symlink can lead outside it (docs/ARCHITECTURE.md, "Workspace file access")."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from assistant.textsafe import has_escapes, name_from_shown, shown_name

#: Symlinks followed while resolving one path (the kernel's own limit is 40).
MAX_LINK_HOPS = 40
#: Times a component may change under us (a racing swap) before the path is refused.
MAX_RACE_RETRIES = 16

HAS_DIR_FD = (
    hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
    and os.open in os.supports_dir_fd
    and os.stat in os.supports_dir_fd
    and os.readlink in os.supports_dir_fd
    and os.mkdir in os.supports_dir_fd
    and os.rename in os.supports_dir_fd
    and os.unlink in os.supports_dir_fd
    and os.scandir in os.supports_fd
)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)

#: A folder: a descriptor (POSIX) or an absolute path string (fallback).
Handle = int | str
Mode = Literal["file", "dir", "any", "parent"]


class PathProblem(Exception):
    """Why a path cannot be used; ``kind`` picks the message the workspace shows."""

    def __init__(self, kind: str, shown: str, detail: str = "") -> None:
        self.kind = kind
        self.shown = shown
        self.detail = detail
        super().__init__(f"{kind}: {shown} {detail}".strip())


# -- primitives --------------------------------------------------------------------------------
def open_root(path: str) -> Handle:
    if not HAS_DIR_FD:
        return os.path.realpath(path)
    return os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC)


def close(handle: Handle) -> None:
    if isinstance(handle, int):
        with contextlib.suppress(OSError):
            os.close(handle)


def lstat_at(handle: Handle, name: str) -> os.stat_result:
    if isinstance(handle, int):
        return os.stat(name, dir_fd=handle, follow_symlinks=False)
    return os.lstat(os.path.join(handle, name))


def open_dir_at(handle: Handle, name: str) -> Handle:
    if isinstance(handle, int):
        return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=handle)
    path = os.path.join(handle, name)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, "is a symlink")
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, "not a directory")
    return path


def open_file_at(handle: Handle, name: str, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
    flags |= _NOFOLLOW | _CLOEXEC | _BINARY
    if isinstance(handle, int):
        return os.open(name, flags, mode, dir_fd=handle)
    path = os.path.join(handle, name)
    if not flags & os.O_CREAT and stat.S_ISLNK(os.lstat(path).st_mode):
        raise OSError(errno.ELOOP, "is a symlink")
    return os.open(path, flags, mode)


def readlink_at(handle: Handle, name: str) -> str:
    if isinstance(handle, int):
        return os.readlink(name, dir_fd=handle)
    return os.readlink(os.path.join(handle, name))


def mkdir_at(handle: Handle, name: str) -> None:
    if isinstance(handle, int):
        os.mkdir(name, 0o777, dir_fd=handle)
    else:
        os.mkdir(os.path.join(handle, name), 0o777)


def scandir(handle: Handle) -> list[os.DirEntry[str]]:
    """The folder's entries (``entry.name`` only is meaningful for a descriptor)."""
    with os.scandir(handle) as it:
        return list(it)


def read_fd(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# -- resolution --------------------------------------------------------------------------------
@dataclass
class Resolved:
    """Where a path led: an open folder ``handle`` (closed by :meth:`close`), the final ``name``
    in it (None: the folder), ``fd`` an open file, ``st`` the entry's status (None: missing)."""

    handle: Handle
    parts: tuple[str, ...]
    name: str | None = None
    fd: int | None = None
    st: os.stat_result | None = None

    @property
    def shown(self) -> str:
        """The path as tools show it (a name that is not UTF-8 with ``\\xHH`` escapes)."""
        parts = (*self.parts, self.name) if self.name is not None else self.parts
        return _join(list(parts))

    @property
    def is_dir(self) -> bool:
        return self.name is None

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
        close(self.handle)


class Resolver:
    """Walks relative component lists from the root (see the module docstring)."""

    def __init__(self, root: str, aliases: tuple[str, ...]) -> None:
        self.root = root
        #: Absolute spellings of the root (canonical first) for absolute paths and links.
        self.aliases = aliases

    def relative_parts(self, absolute: str) -> list[str] | None:
        """Components of ``absolute`` below the root, or None when it is not under it."""
        norm = os.path.normpath(absolute)
        for alias in self.aliases:
            if os.path.normcase(norm) == os.path.normcase(alias):
                return []
            prefix = alias.rstrip(os.sep) + os.sep
            if os.path.normcase(norm).startswith(os.path.normcase(prefix)):
                return split_parts(norm[len(prefix) :])
        return None

    def resolve(self, parts: list[str], mode: Mode, *, create: bool = False) -> Resolved:
        """Walk ``parts`` from the root. Raises :class:`PathProblem`."""
        handle = open_root(self.root)
        names: list[str] = []
        pending = deque(parts)
        hops = races = 0
        #: The last link followed and its target, to say why a later '..' leaves the root.
        via: tuple[str, str] | None = None
        try:
            while pending:
                comp = _on_disk(handle, pending.popleft())
                last = not pending
                if comp in ("", "."):
                    if last and mode in ("file", "parent"):
                        raise PathProblem("is_dir", _join(names))
                    continue
                if comp == "..":
                    if not names:
                        if via is not None:
                            raise PathProblem("link_outside", via[0], via[1])
                        raise PathProblem("outside", _join(names))
                    names.pop()
                    close(handle)
                    handle = self._reopen(names)
                    if last and mode in ("file", "parent"):
                        raise PathProblem("is_dir", _join(names))
                    continue
                if last and mode != "dir":
                    final = self._final(handle, names, comp, mode)
                    if isinstance(final, Resolved):
                        return final
                    kind, target = final
                else:
                    try:
                        sub = open_dir_at(handle, comp)
                    except OSError as exc:
                        kind, target = self._classify(handle, names, comp, exc, create)
                    else:
                        close(handle)
                        handle = sub
                        names.append(comp)
                        continue
                if kind == "retry":
                    races += 1
                    if races > MAX_RACE_RETRIES:
                        raise PathProblem("changing", _join([*names, comp]))
                    pending.appendleft(comp)
                    continue
                # a symlink: splice its target into the rest of the path
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise PathProblem("loop", _join([*names, comp]))
                assert target is not None
                via = (_join([*names, comp]), target)
                if os.path.isabs(target):
                    inside = self.relative_parts(target)
                    if inside is None:
                        raise PathProblem("link_outside", _join([*names, comp]), target)
                    close(handle)
                    handle = open_root(self.root)
                    names = []
                    pending.extendleft(reversed(inside))
                else:
                    pending.extendleft(reversed(split_parts(target)))
            if mode in ("file", "parent"):
                raise PathProblem("is_dir", _join(names))
            return Resolved(handle, tuple(names))
        except BaseException:
            close(handle)
            raise

    def _reopen(self, names: list[str]) -> Handle:
        """The folder ``names`` below the root, walked again without following links."""
        handle = open_root(self.root)
        for name in names:
            try:
                sub = open_dir_at(handle, name)
            except OSError:
                close(handle)
                raise PathProblem("changing", _join(names)) from None
            close(handle)
            handle = sub
        return handle

    def _classify(
        self, handle: Handle, names: list[str], comp: str, exc: OSError, create: bool
    ) -> tuple[str, str | None]:
        """Why a folder component did not open: a link to follow, a retry, or a problem."""
        shown = _join([*names, comp])
        st = _lstat_or_none(handle, comp, shown)
        if st is None:
            if create:
                with contextlib.suppress(FileExistsError):
                    mkdir_at(handle, comp)
                return "retry", None
            raise PathProblem("missing", shown)
        if stat.S_ISLNK(st.st_mode):
            return "link", self._readlink(handle, comp, shown)
        if stat.S_ISDIR(st.st_mode):
            if exc.errno in (errno.EACCES, errno.EPERM):
                raise PathProblem("access", shown, exc.strerror or str(exc))
            return "retry", None  # it was swapped back to a folder meanwhile
        if stat.S_ISREG(st.st_mode):
            raise PathProblem("not_dir", shown)
        raise PathProblem("special", shown)

    def _readlink(self, handle: Handle, comp: str, shown: str) -> str:
        try:
            return readlink_at(handle, comp)
        except OSError:
            raise PathProblem("changing", shown) from None

    def _final(
        self, handle: Handle, names: list[str], comp: str, mode: Mode
    ) -> Resolved | tuple[str, str | None]:
        """The last component: open it as ``mode`` wants, or say to follow/retry."""
        shown = _join([*names, comp])
        st = _lstat_or_none(handle, comp, shown)
        if st is None:
            if mode == "parent":
                return Resolved(handle, tuple(names), comp)
            raise PathProblem("missing", shown)
        if stat.S_ISLNK(st.st_mode):
            return "link", self._readlink(handle, comp, shown)
        if stat.S_ISDIR(st.st_mode):
            if mode in ("file", "parent"):
                raise PathProblem("is_dir", shown)
            try:
                sub = open_dir_at(handle, comp)
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EPERM):
                    raise PathProblem("access", shown, exc.strerror or str(exc)) from None
                return "retry", None
            close(handle)
            return Resolved(sub, (*names, comp))
        if not stat.S_ISREG(st.st_mode):
            raise PathProblem("special", shown)
        if mode == "parent":
            return Resolved(handle, tuple(names), comp, st=st)
        try:
            fd = open_file_at(handle, comp, os.O_RDONLY | _NONBLOCK)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                raise PathProblem("access", shown, exc.strerror or str(exc)) from None
            return "retry", None  # swapped for a link or a folder meanwhile
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            os.close(fd)
            return "retry", None
        return Resolved(handle, tuple(names), comp, fd=fd, st=opened)


def _lstat_or_none(handle: Handle, name: str, shown: str) -> os.stat_result | None:
    """The entry's own status, None when it does not exist; PathProblem when unreadable."""
    try:
        return lstat_at(handle, name)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise PathProblem("access", shown, err.strerror or str(err)) from None


def split_parts(path: str) -> list[str]:
    """Components of a relative path ('' and '.' kept; the walk skips them)."""
    text = path
    if os.altsep:
        text = text.replace(os.altsep, os.sep)
    return text.split(os.sep)


def _join(names: list[str]) -> str:
    return shown_name("/".join(names)) if names else "."


def _on_disk(handle: Handle, comp: str) -> str:
    """The name ``comp`` means in the folder: itself, or, when no entry has that name and it
    holds ``\\xHH`` escapes, the name a tool showed that way (``caf\\xe9.txt`` for the
    Latin-1 bytes ``caf\\xe9.txt``)."""
    if not has_escapes(comp):
        return comp
    try:
        lstat_at(handle, comp)
        return comp
    except OSError:
        pass
    name = name_from_shown(comp)
    try:
        lstat_at(handle, name)
    except (OSError, ValueError):
        return comp
    return name


def iter_dir(handle: Handle) -> Iterator[os.DirEntry[str]]:
    """The entries of an open folder, sorted by name."""
    yield from sorted(scandir(handle), key=lambda e: e.name)
