"""Run by test_small_screen.py in a process of its own (the scale factor and the screen are
fixed before Qt starts): open the window on a 1440x900 screen at QT_SCALE_FACTOR=1.5, with a
geometry saved on a larger screen, and report whether it fits. Prints one JSON line."""

from __future__ import annotations

import json
import sys
import time

from PySide6.QtCore import QByteArray
from PySide6.QtWidgets import QApplication

from assistant.app import build_main_window
from assistant.config import Settings
from assistant.sessions.store import SessionStore
from assistant.ui.window_state import GEOMETRY_KEY, window_settings
from tests.fakes.scripted import ScriptedBackend


def main(screenshot: str) -> int:
    app = QApplication([])
    backend = ScriptedBackend(["Sure, here is the plan."])
    settings = Settings()  # the default workspace, under ASSISTANT_HOME
    first = build_main_window(settings, lambda *_a: backend, SessionStore())
    first.resize(1770, 1200)  # what the window was on a big screen
    store = window_settings()
    store.setValue(GEOMETRY_KEY, QByteArray(first.saveGeometry()))
    store.sync()
    first.shutdown()
    first.deleteLater()

    window = build_main_window(settings, lambda *_a: backend, SessionStore())
    window.show()
    deadline = time.monotonic() + 1.0  # the model "loads", the context is counted
    while time.monotonic() < deadline or window.context_bar.usage is None:
        app.processEvents()
        time.sleep(0.01)
        if time.monotonic() > deadline + 10:
            break
    area = window.screen().availableGeometry()
    frame = window.frameGeometry()
    ok = area.contains(frame)
    welcome = window.transcript.currentWidget() is window.welcome
    window.grab().save(screenshot)
    print(json.dumps({
        "scale": window.devicePixelRatio(),
        "available": [area.x(), area.y(), area.width(), area.height()],
        "frame": [frame.x(), frame.y(), frame.width(), frame.height()],
        "input_visible": window.input.isVisible()
        and area.contains(window.input.mapToGlobal(window.input.rect().bottomRight())),
        "status_visible": window.statusBar().isVisible()
        and area.contains(window.statusBar().mapToGlobal(window.statusBar().rect().bottomRight())),
        "fits": ok,
        "welcome": welcome,
        "context": window.context_bar.usage is not None,
    }))
    window.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
