"""A broken model never leaves the app unusable; the window remembers its geometry;
the bridge batches streamed text."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QMessageBox

from assistant.agent.events import AssistantDelta, Notice, TurnFinished
from assistant.config import Settings
from assistant.llm.base import LLMBackend, ModelLoadError
from assistant.ui.bridge import ServiceBridge
from tests.fakes.scripted import ScriptedBackend


def test_broken_model_shows_error_and_app_stays_usable(make_window, tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    good = ScriptedBackend(["Working now."])

    def factory(model: str, _n_ctx: int, _threads: int) -> LLMBackend:
        if model == str(broken):
            raise ModelLoadError(model, "not a GGUF file (bad magic)")
        return good

    h = make_window(factory=factory, settings=Settings(model=str(broken)), wait=False)
    h.qtbot.waitUntil(lambda: h.controller.model.state == "failed", timeout=20_000)
    assert h.window.model_banner.isVisible()
    assert "not a GGUF file" in h.window.model_banner_label.text()
    box = h.window.error_box
    assert isinstance(box, QMessageBox) and box.isVisible()
    assert "not a GGUF file" in box.text()
    box.accept()
    # still usable: typing works and the message waits for a model
    h.type_and_send("hello?")
    assert h.controller.queue == ["hello?"]
    assert "queued" in h.window.queue_label.text()
    # pick another model in the settings: it loads and the queued message is answered
    dialog = h.window.open_settings()
    dialog.model_combo.setCurrentIndex(dialog.model_combo.findData("smollm2-135m-instruct"))
    dialog.accept()
    h.wait_ready()
    h.wait_idle()
    assert not h.window.model_banner.isVisible()
    messages = h.controller.chat.conversation.messages
    assert [m.content for m in messages] == ["hello?", "Working now."]


def test_missing_model_file_message(make_window, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.gguf"

    def factory(model: str, _n_ctx: int, _threads: int) -> LLMBackend:
        raise ModelLoadError(model, "file not found")

    h = make_window(factory=factory, settings=Settings(model=str(missing)), wait=False)
    h.qtbot.waitUntil(lambda: h.controller.model.state == "failed", timeout=20_000)
    text = h.window.model_banner_label.text()
    assert str(missing) in text and "file not found" in text and "Settings" in text
    assert h.window.model_label.text() == "no model"
    h.window.error_box.accept()
    h.controller.submit("/help")  # app commands work without a model
    assert h.window.chat_view.entries()


def test_geometry_and_splitter_are_remembered(make_window) -> None:
    h = make_window()
    h.window.resize(760, 560)
    h.qtbot.wait(50)
    h.window.splitter.setSizes([310, 450])
    size, sizes = h.window.size(), h.window.splitter.sizes()
    assert size.width() == 760 and sizes[0] == 310
    h.window.close()
    h2 = make_window()
    assert h2.window.size() == size
    assert h2.window.splitter.sizes() == sizes


def test_bridge_batches_deltas_and_keeps_order(qtbot) -> None:
    bridge = ServiceBridge()
    received: list[str] = []
    order: list[str] = []
    bridge.on(AssistantDelta, lambda e: (received.append(e.text), order.append("delta")))
    bridge.on(Notice, lambda _n: order.append("notice"))
    bridge.on(TurnFinished, lambda _e: order.append("finished"))

    def worker() -> None:
        for i in range(200):
            bridge.post(AssistantDelta(f"{i} "))
        bridge.post(Notice("info", "done streaming"))
        bridge.post(TurnFinished())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    qtbot.waitUntil(lambda: "finished" in order)
    assert "".join(received) == "".join(f"{i} " for i in range(200))
    assert len(received) < 20  # batched, not one signal per token
    assert order[-2:] == ["notice", "finished"]
    assert set(order[:-2]) == {"delta"}


def test_bridge_drops_events_after_close(qtbot) -> None:
    bridge = ServiceBridge()
    got: list[object] = []
    bridge.on(Notice, got.append)
    bridge.close()
    bridge.post(Notice("info", "late"))
    QCoreApplication.processEvents()
    assert got == []

