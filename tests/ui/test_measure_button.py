"""No shell commands in the window (issue 43, item 4): Settings' Model tab measures the
model in use with a button, through the service (a job on the model's worker), and the
result is kept where the engine reads it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from assistant.llm.context_probe import EffectiveContextStore, store_key
from assistant.service.events import StatusChanged
from assistant.service.measure import MEASURING
from assistant.ui.notices import NoticeWidget
from tests.fakes.scripted import ScriptedBackend


def test_measure_now_runs_the_probe_through_the_service(make_window) -> None:
    backend = ScriptedBackend(window=2048, trained_context=2048)
    h = make_window(backend=backend)
    dialog = h.window.open_settings()
    texts = " ".join(label.text() for label in dialog.findChildren(QLabel))
    assert "python -m" not in texts
    button = dialog.measure_button
    assert button.isVisible()
    statuses: list[str] = []
    h.window.bridge.on(StatusChanged, lambda event: statuses.append(event.status.text))
    h.qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert not button.isEnabled()
    h.wait_idle(timeout=120_000)
    assert any(MEASURING in s for s in statuses)
    notices = [n for n in h.window.chat_view.findChildren(NoticeWidget)
               if "Measured:" in n.label.text()]
    assert notices, [n.label.text() for n in h.window.chat_view.findChildren(NoticeWidget)]
    assert EffectiveContextStore().get(store_key(backend.info)) is not None
    dialog.reject()
