"""Remembering the window: geometry and splitter sizes in an INI file in the config dir.

QSettings with an explicit file (``window.ini`` beside ``settings.json``) keeps it under
``ASSISTANT_HOME`` in tests and out of the platform registry.
"""

from __future__ import annotations

import contextlib

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QMainWindow, QSplitter

from assistant import paths

GEOMETRY_KEY = "window/geometry"
STATE_KEY = "window/state"
SPLITTER_KEY = "window/splitter"


def window_settings() -> QSettings:
    path = paths.config_dir() / "window.ini"
    path.parent.mkdir(parents=True, exist_ok=True)
    return QSettings(str(path), QSettings.Format.IniFormat)


def save_window_state(window: QMainWindow, splitter: QSplitter) -> None:
    store = window_settings()
    store.setValue(GEOMETRY_KEY, window.saveGeometry())
    store.setValue(STATE_KEY, window.saveState())
    store.setValue(SPLITTER_KEY, [int(s) for s in splitter.sizes()])
    store.sync()


def restore_window_state(window: QMainWindow, splitter: QSplitter) -> bool:
    """Restore what was saved; returns False when there was nothing to restore."""
    store = window_settings()
    geometry = store.value(GEOMETRY_KEY)
    restored = False
    if isinstance(geometry, QByteArray) and not geometry.isEmpty():
        restored = window.restoreGeometry(geometry)
    state = store.value(STATE_KEY)
    if isinstance(state, QByteArray) and not state.isEmpty():
        window.restoreState(state)
    sizes = store.value(SPLITTER_KEY)
    if isinstance(sizes, list | tuple) and sizes:
        with contextlib.suppress(TypeError, ValueError):
            splitter.setSizes([int(s) for s in sizes])
    return restored
