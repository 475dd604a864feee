"""Remembering the window: geometry, splitter sizes and the open chat, in ``window.ini``
beside ``settings.json`` (under ``ASSISTANT_HOME`` in tests, out of the platform registry);
a restored window is fitted to the screen it opens on.
"""

from __future__ import annotations

import contextlib

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMainWindow, QSplitter, QWidget

from assistant import paths

GEOMETRY_KEY = "window/geometry"
STATE_KEY = "window/state"
SPLITTER_KEY = "window/splitter"
LAST_CHAT_KEY = "window/last_chat"


def window_settings() -> QSettings:
    path = paths.config_dir() / "window.ini"
    path.parent.mkdir(parents=True, exist_ok=True)
    return QSettings(str(path), QSettings.Format.IniFormat)


def save_window_state(
    window: QMainWindow, splitter: QSplitter, last_chat: str | None = None
) -> None:
    store = window_settings()
    if last_chat:
        store.setValue(LAST_CHAT_KEY, last_chat)
    else:
        store.remove(LAST_CHAT_KEY)
    store.setValue(GEOMETRY_KEY, window.saveGeometry())
    store.setValue(STATE_KEY, window.saveState())
    store.setValue(SPLITTER_KEY, [int(s) for s in splitter.sizes()])
    store.sync()


def restore_window_state(window: QMainWindow, splitter: QSplitter) -> None:
    store = window_settings()
    geometry = store.value(GEOMETRY_KEY)
    if isinstance(geometry, QByteArray) and not geometry.isEmpty():
        window.restoreGeometry(geometry)
    state = store.value(STATE_KEY)
    if isinstance(state, QByteArray) and not state.isEmpty():
        window.restoreState(state)
    sizes = store.value(SPLITTER_KEY)
    if isinstance(sizes, list | tuple) and sizes:
        with contextlib.suppress(TypeError, ValueError):
            splitter.setSizes([int(s) for s in sizes])


def last_chat() -> str | None:
    value = window_settings().value(LAST_CHAT_KEY)
    return value if isinstance(value, str) and value else None


#: Room assumed for the title bar and borders before the window manager has said how
#: much they take (a window is fitted again once it has).
ASSUMED_FRAME = (8, 40)


def fit_to_screen(window: QWidget) -> None:
    """Shrink and move ``window`` so all of it is inside its screen's available area (at
    any scale factor the available area is in the same logical pixels as the window)."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    area = screen.availableGeometry()
    frame = window.frameGeometry()
    extra_w = frame.width() - window.width()
    extra_h = frame.height() - window.height()
    if extra_w == 0 and extra_h == 0:  # decorations not known yet
        extra_w, extra_h = ASSUMED_FRAME
    width = min(window.width(), max(1, area.width() - extra_w))
    height = min(window.height(), max(1, area.height() - extra_h))
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)
    frame = window.frameGeometry()
    full_w, full_h = max(frame.width(), width + extra_w), max(frame.height(), height + extra_h)
    x = min(max(frame.x(), area.left()), area.right() - full_w + 1)
    y = min(max(frame.y(), area.top()), area.bottom() - full_h + 1)
    if (x, y) != (frame.x(), frame.y()):
        window.move(x, y)
