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
    assert h.controller.chat.conversation.messages[-1].content == "Hello back."


def _errors(h) -> list[str]:
    return [w.text for w in h.window.chat_view.entries()
            if isinstance(w, NoticeWidget) and w.level == "error"]


def test_an_edit_too_large_goes_back_into_the_input_box_as_an_edit(make_window) -> None:
    backend = ScriptedBackend(["Hello back.", "Line 3 says hello."], window=4096)
    h = make_window(backend=backend)
    h.type_and_send("Hello")
    h.wait_idle()
    user = h.controller.chat.conversation.messages[0]
    calls = len(backend.calls)
    inp = h.window.input
    h.qtbot.keyClick(inp, Qt.Key.Key_Up)  # edit the last message
    assert h.window.editing_id == user.id
    huge = "\n".join(f"{i:05d} a line of a pasted log with some words" for i in range(600))
    inp.setPlainText(huge)
    h.qtbot.keyClick(inp, Qt.Key.Key_Return)
    h.qtbot.waitUntil(lambda: inp.toPlainText() == huge, timeout=20_000)
    h.wait_idle()
    assert any("Not sent: your message is" in e and "room for" in e for e in _errors(h))
    # Still an edit of the same message: nothing was written, no branch was made.
    assert h.window.editing_id == user.id and h.window.edit_banner.isVisible()
    assert [m.content for m in h.controller.chat.conversation.messages] == ["Hello", "Hello back."]
    widget = h.window.chat_view.message_widgets[user.id]
    assert not widget.branch_switcher.isVisibleTo(widget)
    assert len(backend.calls) == calls
    # Shortened, it is sent as the edit and answered on a second branch.
    inp.setPlainText("\n".join(huge.splitlines()[:20]) + "\nWhat does line 3 say?")
    h.qtbot.keyClick(inp, Qt.Key.Key_Return)
    h.wait_idle()
    msgs = h.controller.chat.conversation.messages
    assert msgs[-1].content == "Line 3 says hello." and msgs[0].content.endswith("line 3 say?")
    first = h.window.chat_view.message_widgets[msgs[0].id]
    assert first.branch_switcher.label.text() == "2/2"
    assert inp.toPlainText() == "" and h.window.editing_id is None


def test_regenerate_after_the_window_shrank_offers_the_message_to_edit(make_window) -> None:
    backend = ScriptedBackend(["Seen."], window=8192)
    h = make_window(backend=backend)
    text = "\n".join(f"{i:05d} a line of a pasted log with some words" for i in range(300))
    h.window.input.setFocus()
    h.window.input.setPlainText(text)
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Return)
    h.wait_idle()
    user, reply = h.controller.chat.conversation.messages[:2]
    backend.window = 3072  # the model's window is smaller now
    widget = h.window.chat_view.message_widgets[reply.id]
    h.qtbot.mouseClick(widget.regenerate_button, Qt.MouseButton.LeftButton)
    h.qtbot.waitUntil(lambda: h.window.input.toPlainText() == text, timeout=20_000)
    h.wait_idle()
    assert any(e.startswith("Not regenerated") for e in _errors(h))
    assert h.window.editing_id == user.id and h.window.edit_banner.isVisible()
    assert [m.id for m in h.controller.chat.conversation.messages] == [user.id, reply.id]
