"""Reading the message ahead through the window: typing into the real input warms the
engine with the prompt of the words typed so far; the switch is in Settings."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.fakes.scripted import ScriptedBackend


def test_typing_warms_the_engine_and_the_send_reads_only_the_last_word(make_window) -> None:
    backend = ScriptedBackend(["Hello!", "Paris."])
    h = make_window(backend=backend)
    h.type_and_send("Hi, I am planning a trip.")
    h.wait_idle()
    h.window.input.setFocus()
    h.qtbot.keyClicks(h.window.input, "What is the capital of France?")
    h.qtbot.waitUntil(lambda: any(w.messages[-1]["content"] == "What is the capital of"
                                  for w in backend.warms), timeout=20_000)
    h.qtbot.waitUntil(lambda: h.controller.drafts._running is None, timeout=20_000)
    assert backend.warms[-1].messages[-2] == {"role": "assistant", "content": "Hello!"}
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Return)
    h.wait_idle()
    result = backend.calls[-1].result
    assert result is not None and result.text == "Paris."
    assert result.prompt_evaluated <= 16 < 300 < result.prompt_reused  # " France?", the end


def test_the_switch_is_in_settings_on_by_default_with_what_it_costs(make_window) -> None:
    h = make_window()
    dialog = h.window.open_settings()
    box = dialog.switch_boxes["read_ahead"]
    assert box is dialog.read_ahead and box.isChecked()
    assert "Costs:" in box.toolTip() and "type" in box.text()
    box.setChecked(False)
    h.qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert h.controller.settings.compaction.read_ahead is False
    before = len(h.backend.warms)
    h.window.input.setFocus()
    h.qtbot.keyClicks(h.window.input, "Some words typed now ")
    h.qtbot.wait(200)
    assert len(h.backend.warms) == before
