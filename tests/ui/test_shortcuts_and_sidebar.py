"""Keyboard shortcuts and the chat list (new, search, rename, delete with undo)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from assistant.ui.settings_dialog import SettingsDialog
from tests.fakes.scripted import ScriptedBackend


def _chat(h, text: str) -> str:  # type: ignore[no-untyped-def]
    h.type_and_send(text)
    h.wait_idle()
    return str(h.controller.chat.chat_id)


def test_ctrl_n_starts_a_new_chat(make_window) -> None:
    h = make_window()
    first = _chat(h, "Hello")
    assert h.window.chat_view.message_widgets
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert h.controller.chat.chat_id is None
    assert not h.window.chat_view.message_widgets
    second = _chat(h, "Another")
    assert second != first
    assert len(h.window.sidebar.titles()) == 2


def test_ctrl_k_focuses_search_and_filters(make_window) -> None:
    h = make_window()
    _chat(h, "Apples are red")
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    _chat(h, "Bananas are yellow")
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.focusWidget() is h.window.sidebar.search
    h.qtbot.keyClicks(h.window.sidebar.search, "apple")
    h.qtbot.waitUntil(lambda: h.window.sidebar.titles() == ["Apples are red"])
    h.qtbot.keyClick(h.window.sidebar.search, Qt.Key.Key_Return)
    assert h.controller.chat.conversation.messages[0].content == "Apples are red"


def test_ctrl_comma_opens_settings(make_window) -> None:
    h = make_window()
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    dialog = h.window.settings_dialog
    assert isinstance(dialog, SettingsDialog) and dialog.isVisible()
    dialog.reject()


def test_clicking_a_chat_opens_it(make_window) -> None:
    h = make_window()
    first = _chat(h, "First chat")
    h.window.new_chat()
    _chat(h, "Second chat")
    item = h.window.sidebar.item_for(first)
    assert item is not None
    rect = h.window.sidebar.list.visualItemRect(item)
    h.qtbot.mouseClick(
        h.window.sidebar.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center()
    )
    assert h.controller.chat.chat_id == first
    assert h.controller.chat.conversation.messages[0].content == "First chat"


def test_rename_chat(make_window) -> None:
    h = make_window()
    chat_id = _chat(h, "Some question")
    dialog = h.window.sidebar.ask_rename(chat_id)
    assert dialog is not None and dialog.isVisible()
    assert dialog.textValue() == "Some question" and dialog.width() >= 440
    dialog.setTextValue("Trip planning")
    dialog.accept()
    assert h.window.sidebar.titles() == ["Trip planning"]
    assert h.controller.store.list_chats()[0].title == "Trip planning"


def test_delete_chat_and_undo(make_window) -> None:
    h = make_window()
    keep = _chat(h, "Keep me")
    h.window.new_chat()
    gone = _chat(h, "Delete me")
    h.window.sidebar.delete(gone)
    assert h.controller.chat.chat_id is None
    assert h.window.sidebar.titles() == ["Keep me"]
    assert h.window.sidebar.undo_bar.isVisible()
    h.qtbot.mouseClick(h.window.sidebar.undo_button, Qt.MouseButton.LeftButton)
    assert sorted(h.window.sidebar.titles()) == ["Delete me", "Keep me"]
    assert not h.window.sidebar.undo_bar.isVisible()
    assert {s.id for s in h.controller.store.list_chats()} == {keep, gone}


def test_escape_with_nothing_running_does_nothing(make_window) -> None:
    h = make_window(backend=ScriptedBackend())
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    assert not h.controller.jobs.busy
