"""What a server may send: an overall deadline, a longest line, a largest answer.

A reply that never ends, pings alone, one byte a second or a 100 MB line escape the HTTP
client's per-read timeout, so every request runs under a :class:`Watch`: a small thread shuts
the socket down at the deadline (or on Stop), ending a blocked read at once, and the answer is
split into lines with a bounded buffer (:class:`TooLarge` past ``max_line``/``max_total``).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import suppress
from typing import Any

from assistant.llm.base import CancelToken

#: How often the watch looks at the clock and the cancel token.
POLL_S = 0.05
#: Trace events of httpcore whose result is the new connection's network stream.
_CONNECTED = ("connection.connect_tcp.complete", "connection.start_tls.complete")


class LimitExceeded(Exception):
    """The server's answer broke one of the limits."""


class DeadlinePassed(LimitExceeded):
    """The answer did not finish before the request's deadline."""


class TooLarge(LimitExceeded):
    """A line or the whole answer is larger than allowed (the message says which)."""


class Watch:
    """Ends one request at its deadline, or when ``cancel`` fires, by shutting its socket.

    The socket is learnt from httpcore's ``trace`` extension as soon as the connection is
    made (pass :meth:`trace`), or later with :meth:`attach`. Call :meth:`stop` when done.
    """

    def __init__(self, deadline_s: float, cancel: CancelToken | None = None) -> None:
        self.deadline_s = deadline_s
        self.deadline = time.monotonic() + deadline_s
        self.expired = False
        self.cancelled = False
        self._cancel = cancel
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="server-watch", daemon=True)
        self._thread.start()

    @property
    def fired(self) -> bool:
        return self.expired or self.cancelled

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def trace(self, event_name: str, info: dict[str, Any]) -> None:
        """httpcore's trace callback: remembers the socket of a new connection."""
        if event_name in _CONNECTED:
            sock = socket_of_stream(info.get("return_value"))
            if sock is not None:
                self.attach(sock)

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            fired = self.fired
        if fired:
            _shut(sock)

    def check(self) -> None:
        """Raise :class:`DeadlinePassed` once the deadline has passed."""
        if self.expired or time.monotonic() >= self.deadline:
            self.expired = True
            raise DeadlinePassed

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            if self._cancel is not None and self._cancel.cancelled:
                self.cancelled = True
            elif time.monotonic() >= self.deadline:
                self.expired = True
            else:
                continue
            with self._lock:
                sock = self._sock
            if sock is not None:
                _shut(sock)
            return

    def stop(self) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)


def _shut(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def socket_of_stream(stream: Any) -> socket.socket | None:
    """The socket under an httpcore network stream, if it exposes one."""
    if stream is None:
        return None
    try:
        sock = stream.get_extra_info("socket")
    except Exception:
        return None
    return sock if isinstance(sock, socket.socket) else None


def bounded_lines(
    chunks: Iterable[bytes], watch: Watch, *, max_line: int, max_total: int
) -> Iterator[bytes]:
    """The lines (without ``\\n`` or ``\\r\\n``) of an answer arriving in ``chunks``.

    Holds at most one line plus one chunk; raises :class:`TooLarge` for a line over
    ``max_line`` bytes or an answer over ``max_total``, and :class:`DeadlinePassed` when a
    chunk arrives after the deadline.
    """
    buffer = bytearray()
    for chunk in _watched(chunks, watch, max_total):
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = bytes(buffer[start:end])
            start = end + 1
            if len(line) > max_line:
                raise TooLarge(f"a line is larger than {max_line:,} bytes")
            yield line[:-1] if line.endswith(b"\r") else line
        del buffer[:start]
        if len(buffer) > max_line:
            raise TooLarge(f"a line is larger than {max_line:,} bytes")
    if buffer:
        yield bytes(buffer)


def bounded_body(chunks: Iterable[bytes], watch: Watch, *, max_total: int) -> bytes:
    """A whole (non-streamed) answer, refused past ``max_total`` bytes or the deadline."""
    return b"".join(_watched(chunks, watch, max_total))


def _watched(chunks: Iterable[bytes], watch: Watch, max_total: int) -> Iterator[bytes]:
    """``chunks`` while the deadline holds and they total at most ``max_total`` bytes."""
    total = 0
    for chunk in chunks:
        watch.check()
        total += len(chunk)
        if total > max_total:
            raise TooLarge(f"the answer is larger than {max_total:,} bytes")
        yield chunk
    if watch.expired:  # the end came from the watch shutting the socket
        raise DeadlinePassed
