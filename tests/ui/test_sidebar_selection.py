"""One selection in the chat list (issue 43, item 5): a right-clicked chat is highlighted
while its menu is open, the menu's entries act on it, and when the menu closes (Esc) the
highlight goes back to the chat on screen, which F2 and the Chat menu act on."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtWidgets import QApplication, QInputDialog, QMenu


def _chat(h, text: str) -> str:  # type: ignore[no-untyped-def]
    h.type_and_send(text)
    h.wait_idle()
    return str(h.controller.chat.chat_id)


def _right_click(h, chat_id: str) -> QMenu:  # type: ignore[no-untyped-def]
    sidebar = h.window.sidebar
    item = sidebar.item_for(chat_id)
    rect = sidebar.list.visualItemRect(item)
    viewport = sidebar.list.viewport()
    # What a desktop sends for a right click: the press (which selects in a list), then
    # the context menu event (QTest's clicks do not synthesize that one).
    h.qtbot.mousePress(viewport, Qt.MouseButton.RightButton, pos=rect.center())
    QApplication.sendEvent(viewport, QContextMenuEvent(
        QContextMenuEvent.Reason.Mouse, rect.center(), viewport.mapToGlobal(rect.center())))
    h.qtbot.mouseRelease(viewport, Qt.MouseButton.RightButton, pos=rect.center())
    h.qtbot.waitUntil(lambda: isinstance(QApplication.activePopupWidget(), QMenu))
    menu = QApplication.activePopupWidget()
    assert isinstance(menu, QMenu)
    return menu


def _choose(h, menu: QMenu, text: str) -> None:  # type: ignore[no-untyped-def]
    action = next(a for a in menu.actions() if a.text() == text)
    for _ in range(menu.actions().index(action) + 1):
        h.qtbot.keyClick(menu, Qt.Key.Key_Down)
    assert menu.activeAction() is action
    h.qtbot.keyClick(menu, Qt.Key.Key_Return)


def test_escape_from_a_chats_menu_puts_the_highlight_back_on_the_chat_on_screen(
    make_window, artifacts_dir
) -> None:
    h = make_window()
    other = _chat(h, "Other chat")
    h.window.new_chat()
    shown = _chat(h, "Chat on screen")
    sidebar = h.window.sidebar
    assert sidebar.highlighted() == [shown]
    menu = _right_click(h, other)
    assert sidebar.highlighted() == [other]  # the menu is about this one
    h.qtbot.wait(50)
    assert h.window.grab().save(str(artifacts_dir / "sidebar-context-menu.png"))
    h.qtbot.keyClick(menu, Qt.Key.Key_Escape)
    h.qtbot.waitUntil(lambda: QApplication.activePopupWidget() is None)
    assert sidebar.highlighted() == [shown]
    assert h.controller.chat.chat_id == shown
    # F2 renames the chat on screen, the one highlighted
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_F2)
    dialog = next(w for w in QApplication.topLevelWidgets()
                  if isinstance(w, QInputDialog) and w.isVisible())
    assert dialog.textValue() == "Chat on screen"
    assert "Chat on screen" in dialog.labelText()
    dialog.reject()


def test_a_chats_menu_renames_and_deletes_the_chat_right_clicked(make_window) -> None:
    h = make_window()
    other = _chat(h, "Other chat")
    h.window.new_chat()
    shown = _chat(h, "Chat on screen")
    _choose(h, _right_click(h, other), "Rename…")
    dialog = next(w for w in QApplication.topLevelWidgets()
                  if isinstance(w, QInputDialog) and w.isVisible())
    assert "Other chat" in dialog.labelText()
    dialog.setTextValue("Renamed other")
    dialog.accept()
    titles = {s.id: s.title for s in h.controller.store.list_chats()}
    assert titles == {other: "Renamed other", shown: "Chat on screen"}
    assert h.window.sidebar.highlighted() == [shown]
    _choose(h, _right_click(h, other), "Delete")
    assert [s.id for s in h.controller.store.list_chats()] == [shown]
    assert h.controller.chat.chat_id == shown
    assert h.window.sidebar.highlighted() == [shown]


def test_a_new_unsaved_chat_leaves_no_chat_highlighted(make_window) -> None:
    h = make_window()
    first = _chat(h, "Saved chat")
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert h.window.sidebar.highlighted() == []
    menu = _right_click(h, first)
    assert h.window.sidebar.highlighted() == [first]
    h.qtbot.keyClick(menu, Qt.Key.Key_Escape)
    h.qtbot.waitUntil(lambda: QApplication.activePopupWidget() is None)
    assert h.window.sidebar.highlighted() == []
