"""Start Qt without a window: proves the platform plugin loads (used by the smoke test)."""

from __future__ import annotations


def qt_platform_name() -> str:
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["offline-assistant"])
    name = QGuiApplication.platformName()
    del app
    return name
