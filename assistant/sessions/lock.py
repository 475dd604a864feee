"""One writer per chat: an exclusive, non-blocking OS lock on ``<locks>/<chat id>.lock``
(the kernel drops it when the holder dies; files stay, as deleting them would race)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from assistant.sessions.errors import ChatLockedError


class ChatLock:
    """Held from :meth:`acquire` until :meth:`release`; raises :class:`ChatLockedError`."""

    def __init__(self, path: Path, chat_id: str) -> None:
        self.path = path
        self.chat_id = chat_id
        self._fd: int | None = None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock(fd)
        except OSError:
            os.close(fd)
            raise ChatLockedError(self.chat_id, self.path) from None
        with contextlib.suppress(OSError):  # who holds it, for diagnostics only
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            _unlock(fd)
        os.close(fd)

    def __enter__(self) -> ChatLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
