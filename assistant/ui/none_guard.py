"""Keep Python 3.11 alive under a PySide6 (6.12.0) whose methods without result take a
reference away from ``None``: on 3.11 the interpreter aborted within minutes ("deallocating
None"; seen twice during long compactions). Why and how: docs/ARCHITECTURE.md, "The window".
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
    """Make ``None`` immortal, as 3.12 does, when calls lose references to it; True when it
    was needed and done. Call it once, before the window is built."""
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
