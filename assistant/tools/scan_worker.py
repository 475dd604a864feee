"""The grep worker process: runs :class:`LineSearcher` over file contents the app sends it, so
a pattern that matches a million lines keeps the app's GIL free and the window painting.

It never sees a path: the app resolves and reads every file inside the workspace sandbox and
sends only the bytes. Started as ``python -m assistant _grep-worker`` (the frozen app:
``offline-assistant _grep-worker``); it exits when its input closes. Kept light: only
``re2`` and the standard library are imported (docs/ARCHITECTURE.md, "Tool safety beyond
paths").

A frame is a header (two little-endian 64-bit lengths), a pickled tuple, then raw bytes.
Request: ``(pattern, ignore_case, want, started, seconds)`` + the file's bytes. Reply:
``(shown, more, over_time)`` + nothing: the first ``want`` matching lines as
``(number, line)``, how many more lines matched, and whether the scan stopped at the time
budget (``time.monotonic() - started > seconds``, checked between steps as in the app).
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

from assistant.tools.search import LineSearcher

HEADER = struct.Struct("<QQ")
#: Largest pickled part of a frame; more means the other side is not a grep worker.
MAX_META_BYTES = 1 << 24

Wait = Callable[[], None]


def send(fd: int, meta: Any, data: bytes = b"") -> None:
    """One frame to ``fd`` (blocking; the GIL is released while the pipe is full)."""
    blob = pickle.dumps(meta, protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(fd, HEADER.pack(len(blob), len(data)) + blob)
    if data:
        _write_all(fd, data)


def receive(fd: int, wait: Wait | None = None) -> tuple[Any, bytes] | None:
    """The next frame from ``fd``, or None at end of input. ``wait()`` is called before each
    read and returns once ``fd`` is readable (it may raise to give up)."""
    head = _read_exact(fd, HEADER.size, wait, eof_ok=True)
    if head is None:
        return None
    meta_len, data_len = HEADER.unpack(head)
    if meta_len > MAX_META_BYTES:
        raise EOFError("not a grep worker frame")
    blob = _read_exact(fd, meta_len, wait)
    data = _read_exact(fd, data_len, wait) if data_len else b""
    assert blob is not None and data is not None
    return pickle.loads(blob), data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int, wait: Wait | None, eof_ok: bool = False) -> bytes | None:
    parts: list[bytes] = []
    left = n
    while left:
        if wait is not None:
            wait()
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            if eof_ok and left == n:
                return None
            raise EOFError("the grep worker's pipe closed mid-frame")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def scan(searcher: LineSearcher, data: bytes, want: int, started: float,
         seconds: float) -> tuple[list[tuple[int, bytes]], int, bool]:
    """What a reply carries for one file (see the module docstring)."""
    over = False

    def over_time() -> bool:
        nonlocal over
        over = time.monotonic() - started > seconds
        return over

    shown: list[tuple[int, bytes]] = []
    more = 0
    for number, line in searcher.lines(data, over_time):
        if len(shown) < want:
            shown.append((number, line))
        else:
            more += 1
    return shown, more, over


def serve(rfd: int, wfd: int) -> int:
    """Answer requests from ``rfd`` on ``wfd`` until ``rfd`` closes."""
    compiled: dict[tuple[str, bool], LineSearcher] = {}
    while True:
        frame = receive(rfd)
        if frame is None:
            return 0
        (pattern, ignore_case, want, started, seconds), data = frame
        key = (pattern, ignore_case)
        if key not in compiled:
            compiled.clear()
            compiled[key] = LineSearcher(pattern, ignore_case=ignore_case)
        send(wfd, scan(compiled[key], data, want, started, seconds))


def main(args: list[str]) -> int:
    del args
    rfd, wfd = sys.stdin.buffer.fileno(), sys.stdout.buffer.fileno()
    try:
        return serve(rfd, wfd)
    except (BrokenPipeError, EOFError, KeyboardInterrupt):
        return 0  # the app closed the pipe (it stopped the search or quit)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
