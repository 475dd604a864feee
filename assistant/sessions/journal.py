"""Appending to chat files, crash-safely: one fsynced line per entry; a failed write is cut
back off, and a torn last line (a crash mid-write) is moved aside to ``<file>.corrupt``."""

from __future__ import annotations

import os
from pathlib import Path

from assistant.atomicfile import fsync_dir, write_atomically
from assistant.sessions.entries import ChatHeader, Entry, encode_line
from assistant.sessions.reader import TornTail


def move_torn_tail_aside(path: Path, torn: TornTail) -> Path:
    """Move the torn bytes to ``<file>.corrupt`` (hold the chat's lock); returns that path."""
    aside = path.with_name(path.name + ".corrupt")
    with aside.open("ab") as fh:
        fh.write(torn.data if torn.data.endswith(b"\n") else torn.data + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    fsync_dir(path.parent)  # a new .corrupt file is on disk before the chat is cut
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, torn.offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    return aside


def create_chat_file(path: Path, header: ChatHeader) -> None:
    if path.exists():
        raise FileExistsError(path)
    write_atomically(path, encode_line(header))


class JournalWriter:
    """Appends entries to one chat file; each :meth:`append` is on disk when it returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND)
        self._size = os.fstat(self._fd).st_size

    def ensure_newline(self) -> None:
        """Terminate a last line whose newline was lost (the entry itself was complete)."""
        self._write(b"\n")

    def append(self, entry: Entry) -> None:
        self._write(encode_line(entry))

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise ValueError("the journal is closed")
        fd = self._fd
        start = self._size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            try:  # never leave half a line in front of later entries
                os.ftruncate(fd, start)
                os.fsync(fd)
            except OSError:
                pass
            raise
        self._size = start + len(data)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
