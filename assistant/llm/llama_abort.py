"""Stopping llama.cpp inside one ``llama_decode`` (a 512-token chunk takes seconds: 5-10 s
from Esc to a stop were measured) with its abort callback, asked after every graph node.

A Python callback would take the GIL hundreds of times per decode, so the callback is libc's
``strlen`` over a two-byte buffer: ``b"\\0\\0"`` (go on) until the call's
:class:`~assistant.llm.base.CancelToken` sets ``b"\\1\\0"`` (abort). Its ``size_t`` is read
as a C ``bool`` (the low byte of the return register on x86-64 and arm64), 0 or 1 here.
Without a libc ``strlen``, a Python callback reads the same byte. The switch is armed per
call, so a stale Stop never aborts the next one (docs/PERFORMANCE.md, "Stop inside a decode").
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import sys
from collections.abc import Iterator
from typing import Any

from assistant.llm.base import CancelToken

log = logging.getLogger("assistant.llm")


def _c_strlen() -> Any | None:
    """libc's ``strlen`` as a ctypes function, or None."""
    try:
        libc = ctypes.cdll.msvcrt if sys.platform == "win32" else ctypes.CDLL(None)
        return libc.strlen
    except (OSError, AttributeError):  # pragma: no cover - no C library to be found
        return None


class AbortSwitch:
    """The abort flag of one ``Llama`` context."""

    def __init__(self) -> None:
        import llama_cpp

        self._lc = llama_cpp
        self._flag = ctypes.create_string_buffer(2)  # b"\0\0"
        strlen = _c_strlen()
        if strlen is not None:
            self._callback: Any = ctypes.cast(strlen, llama_cpp.ggml_abort_callback)
            self.kind = "c"
        else:  # pragma: no cover - platforms without a libc strlen
            self._callback = llama_cpp.ggml_abort_callback(lambda _data: self.raised)
            self.kind = "python"
        self._data = ctypes.cast(self._flag, ctypes.c_void_p)
        self._installed_on: int | None = None
        #: False: no callback (to measure what it gains: Stop is seen between batches only).
        self.enabled = True

    @property
    def raised(self) -> bool:
        """Whether the current call was aborted (or asked to be)."""
        return self._flag.raw[0] != 0

    def install(self, ctx: Any) -> None:
        """Give llama.cpp context ``ctx`` the callback (again after a new context)."""
        address = ctypes.cast(ctx, ctypes.c_void_p).value
        if self.enabled and address != self._installed_on:
            self._lc.llama_set_abort_callback(ctx, self._callback, self._data)
            self._installed_on = address

    def _raise(self) -> None:
        self._flag[0] = b"\x01"

    @contextlib.contextmanager
    def armed(self, ctx: Any, cancel: CancelToken | None) -> Iterator[None]:
        """While the block runs, cancelling ``cancel`` aborts llama.cpp's current decode."""
        self.install(ctx)
        self._flag[0] = b"\x00"
        remove = cancel.on_cancel(self._raise) if cancel is not None and self.enabled else None
        try:
            yield
        finally:
            if remove is not None:
                remove()
            self._flag[0] = b"\x00"
