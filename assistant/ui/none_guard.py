"""Keep Python 3.11 alive under a PySide6 that returns ``None`` without a reference.

PySide6 6.12.0's wheels (``cp310-abi3``) return ``None`` from every method without
result without taking a reference to it: each call of ``setText``, ``update``, a
``QPainter`` draw... takes one reference away from ``None``. From Python 3.12 on ``None``
is immortal and nothing happens; on 3.11 its count reaches zero after some thousands of
calls and the interpreter aborts ("Fatal Python error: none_dealloc: deallocating None").
In the window that is minutes: the busy spinner alone repaints 16 times a second, so a
long compaction ended in a crash (seen twice while taking the compaction screenshots).

:func:`protect_none` measures the loss once (64 calls of a method without result on a
throwaway ``QObject``) and, only when references are lost and the interpreter is older
than 3.12, gives ``None`` a very large reference count, which is what 3.12 does for it
(an immortal object). Nothing else changes; with a fixed PySide6 the probe finds no loss
and the function does nothing.
"""

from __future__ import annotations

import ctypes
import sys

from PySide6.QtCore import QObject

#: References given to ``None`` when calls lose them: 2**40 calls is decades of painting.
HEADROOM = 1 << 40
PROBE_CALLS = 64


def lost_per_call() -> float:
    """References to ``None`` one call of a PySide6 method without result takes away."""
    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(PROBE_CALLS):
        probe.setObjectName("none-guard")
    return (before - sys.getrefcount(None)) / PROBE_CALLS


def protect_none() -> bool:
    """Make ``None`` outlive PySide6's lost references (see the module docstring); True
    when it was needed and done. Call it once, before the window is built."""
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    if lost_per_call() < 0.5:
        return False
    # CPython's object header starts with the reference count (Py_ssize_t); ``id`` is the
    # object's address. Raising it is what an immortal object's count amounts to. True and
    # False get the same (3.12 makes them immortal too): a full run of the window's tests
    # ended in "deallocating True or False" at exit, from a path not found yet.
    for constant in (None, True, False):
        count = ctypes.c_ssize_t.from_address(id(constant))
        if count.value < HEADROOM:
            count.value += HEADROOM
    return True
