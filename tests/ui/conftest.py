"""Fixtures for the Qt UI tests.

The shared ``tests/conftest.py`` already points ``ASSISTANT_HOME`` at a temporary folder
and fails a test that leaves a thread running; here every window is built with a scripted
backend (no real model), closed after the test (which stops its worker thread), and
screenshots go to ``ASSISTANT_TEST_ARTIFACTS`` (default ``test-artifacts/`` in the repo).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QApplication, QDialog, QMainWindow, QWidget
from pytestqt.qtbot import QtBot

from assistant.config import Settings
from assistant.llm.base import LLMBackend
from assistant.service.service import ChatService
from assistant.sessions.store import SessionStore
from assistant.ui.main_window import MainWindow
from tests.fakes.scripted import ScriptedBackend

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parents[2]

#: How long a wait for something on screen may take before the test fails. The waits are
#: for events, so this only bounds a failure; pytest-qt's 5 s was passed on a loaded 2-core
#: machine (a model switch's "Loading" line, seen 4 times in 12 under two busy loops).
PATIENT_WAIT_MS = 30_000


@pytest.fixture(autouse=True)
def _patient_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """``qtbot.waitUntil`` without a timeout waits up to :data:`PATIENT_WAIT_MS`."""
    original = QtBot.waitUntil

    def wait_until(self: QtBot, callback: Callable[[], bool | None], *,
                   timeout: int = PATIENT_WAIT_MS) -> None:
        original(self, callback, timeout=timeout)

    monkeypatch.setattr(QtBot, "waitUntil", wait_until)


@pytest.fixture(autouse=True)
def _zoom_back_to_100(qapp: QApplication) -> Iterator[None]:
    """The zoom is the application's (its font and stylesheet): a test that zooms does not
    leave the next one's widgets zoomed."""
    yield
    from assistant.ui import theme

    theme.apply_zoom(qapp, 100)


@dataclass
class Harness:
    """A window with a scripted model, and helpers that act like a user."""

    window: MainWindow
    backend: ScriptedBackend
    qtbot: QtBot

    @property
    def controller(self) -> ChatService:
        """The session service behind the window."""
        return self.window.service

    def type_and_send(self, text: str) -> None:
        self.window.input.setFocus()
        self.qtbot.keyClicks(self.window.input, text)
        self.qtbot.keyClick(self.window.input, Qt.Key.Key_Return)

    def wait_idle(self, timeout: int = 30_000) -> None:
        self.qtbot.waitUntil(
            lambda: not self.controller.jobs.busy and not self.controller.queue, timeout=timeout
        )
        self.window.bridge.flush()

    def wait_ready(self, timeout: int = 30_000) -> None:
        self.qtbot.waitUntil(lambda: self.controller.ready, timeout=timeout)


@pytest.fixture
def artifacts_dir() -> Path:
    path = Path(os.environ.get("ASSISTANT_TEST_ARTIFACTS", str(REPO / "test-artifacts")))
    path.mkdir(parents=True, exist_ok=True)
    return path


class StrayWindows(QObject):
    """Records child widgets shown before they had a parent: a widget shown without one is a
    window of its own (on a desktop it flashes up and takes the keyboard from the chat) until
    a layout adopts it. A widget a test shows on its own never gets a parent: not a stray."""

    def __init__(self) -> None:
        super().__init__()
        self.windows: dict[int, str] = {}  # shown as plain windows: id -> what and where
        self.shown: list[str] = []

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if not isinstance(watched, QWidget):
            return False
        if (
            event.type() == QEvent.Type.Show
            and watched.windowType() == Qt.WindowType.Window
            and not isinstance(watched, QMainWindow | QDialog)
        ):
            where = [f for f in traceback.extract_stack() if "/assistant/" in f.filename]
            at = f" at {Path(where[-1].filename).name}:{where[-1].lineno}" if where else ""
            key = id(watched)
            self.windows[key] = type(watched).__name__ + at
            watched.destroyed.connect(lambda _=None, key=key: self.windows.pop(key, None))
        elif event.type() == QEvent.Type.ParentChange and watched.parent() is not None:
            stray = self.windows.pop(id(watched), None)
            if stray is not None:
                self.shown.append(stray)
        return False


@pytest.fixture(autouse=True)
def _no_stray_windows(qapp: QApplication) -> Iterator[None]:
    """Every UI test fails when a child widget was shown as a window of its own."""
    strays = StrayWindows()
    qapp.installEventFilter(strays)
    yield
    qapp.removeEventFilter(strays)
    assert strays.shown == [], f"shown as windows of their own: {strays.shown}"


@pytest.fixture
def make_window(qtbot: QtBot, tmp_path: Path) -> Iterator[Callable[..., Harness]]:
    """Build windows: ``make_window(backend=..., settings=..., factory=..., wait=True)``."""
    from assistant.app import build_main_window

    built: list[MainWindow] = []

    def make(
        backend: ScriptedBackend | None = None,
        settings: Settings | None = None,
        factory: Callable[[str, int, int], LLMBackend] | None = None,
        wait: bool = True,
        show: bool = True,
    ) -> Harness:
        scripted = backend or ScriptedBackend()
        settings = settings or Settings(workspace=str(tmp_path / "workspace"))
        window = build_main_window(
            settings,
            factory or (lambda _model, _n_ctx, _threads: scripted),
            SessionStore(),
        )
        built.append(window)
        qtbot.addWidget(window)
        if show:
            window.show()
            window.activateWindow()
            qtbot.waitUntil(
                lambda: window.isActiveWindow() or QApplication.activeModalWidget() is not None
            )
        harness = Harness(window, scripted, qtbot)
        if wait:
            harness.wait_ready()
        return harness

    yield make
    for window in built:
        window.close()
        window.shutdown()
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, QWidget) and widget.isVisible():
            widget.close()
