"""A message too large for the model's window stays in the input box, with a notice giving
its size and the room (nothing is sent or lost)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from assistant.ui.message_widgets import MessageWidget
from assistant.ui.notices import NoticeWidget
from tests.fakes.scripted import ScriptedBackend


def test_a_message_too_large_goes_back_into_the_input_box(make_window) -> None:
    backend = ScriptedBackend(["Hello back."], window=4096)
    h = make_window(backend=backend)
    huge = "\n".join(f"{i:05d} a line of a pasted log with some words" for i in range(600))
    inp = h.window.input
    inp.setFocus()
    inp.setPlainText(huge)
    h.qtbot.keyClick(inp, Qt.Key.Key_Return)
    h.qtbot.waitUntil(lambda: inp.toPlainText() == huge, timeout=20_000)
    h.wait_idle()
    errors = [w.text for w in h.window.chat_view.entries()
              if isinstance(w, NoticeWidget) and w.level == "error"]
    assert any("Not sent: your message is" in e and "room for" in e for e in errors)
    assert not [w for w in h.window.chat_view.entries() if isinstance(w, MessageWidget)]
    assert backend.calls == []
    # Shortened, it is sent and answered.
    inp.setPlainText("\n".join(huge.splitlines()[:20]))
    h.qtbot.keyClick(inp, Qt.Key.Key_Return)
    h.wait_idle()
    assert inp.toPlainText() == ""
    assert h.controller.conversation.messages[-1].content == "Hello back."
