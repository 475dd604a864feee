"""The composition root of the window: builds the settings, store, worker, bridge, session
service and window, and connects them (``build_main_window`` takes a fake backend in tests)."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from assistant.config import Settings, load_settings
from assistant.llm.registry import Registry, load_registry
from assistant.llm.worker import BackendFactory, ModelWorker, default_factory
from assistant.service.service import ChatService
from assistant.sessions.store import SessionStore
from assistant.ui import theme
from assistant.ui.approval import GuiApprover
from assistant.ui.bridge import ServiceBridge
from assistant.ui.main_window import SHORTCUTS_HELP, MainWindow
from assistant.ui.none_guard import protect_none

APP_NAME = "Offline Assistant"


def _registry() -> Registry | None:
    try:
        return load_registry()
    except (OSError, ValueError, KeyError):
        return None


def build_main_window(
    settings: Settings,
    backend_factory: BackendFactory = default_factory,
    store: SessionStore | None = None,
    *,
    notice: str | None = None,
    load: bool = True,
) -> MainWindow:
    """Build the window and start loading the model; ``backend_factory`` runs on the worker."""
    protect_none()  # PySide6 6.12 on Python 3.11: see assistant.ui.none_guard
    app = QApplication.instance()
    if isinstance(app, QApplication):
        theme.apply_theme(app, settings.theme)
    worker = ModelWorker(backend_factory)
    bridge = ServiceBridge()
    window_ref: list[MainWindow] = []
    approver = GuiApprover(lambda: window_ref[0] if window_ref else None)
    service = ChatService(settings, store or SessionStore(), worker, approver, bridge.post,
                          dispatch=bridge.call_in_gui, extra_help=SHORTCUTS_HELP)
    window = MainWindow(service, bridge, approver, _registry())
    window_ref.append(window)
    bridge.setParent(window)
    approver.setParent(window)
    if notice:
        window.show_notice("warning", notice)
    if load:
        service.load_model()
    return window


def _icon_path() -> Path | None:
    """The app icon: bundled with a frozen app, else from the source tree's packaging/."""
    base = getattr(sys, "_MEIPASS", None)
    candidates = [Path(base) / "icons" / "offline-assistant.svg"] if base else []
    candidates.append(Path(__file__).resolve().parents[1] / "packaging" / "offline-assistant.svg")
    return next((p for p in candidates if p.exists()), None)


def run_gui(argv: list[str]) -> int:
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        app = QApplication([sys.argv[0], *argv])
    protect_none()  # before the calls below: see assistant.ui.none_guard
    app.setApplicationName(APP_NAME)
    app.setApplicationDisplayName("Offline Assistant")
    app.setDesktopFileName("offline-assistant")
    icon = _icon_path()
    if icon is not None:
        app.setWindowIcon(QIcon(str(icon)))
    loaded = load_settings()
    window = build_main_window(loaded.settings, notice=loaded.notice)
    hints = app.styleHints()

    def follow_system(*_args: object) -> None:
        if window.service.settings.theme == "system":
            theme.apply_theme(app, "system")

    hints.colorSchemeChanged.connect(follow_system)
    window.show()
    return app.exec()
