"""The menu bar and its shortcuts (issue 26, deliverable 6): real key presses and menu
actions; zoom kept across a restart, continue generation, deleting a message as a branch,
copy chat, export through the file dialog."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import QApplication, QFileDialog, QInputDialog, QPlainTextEdit

from assistant.agent.continuation import CONTINUE_REQUEST
from assistant.config import load_settings
from assistant.ui.message_widgets import MessageWidget
from assistant.ui.theme import monospace_font
from assistant.ui.window_dialogs import export_target
from tests.fakes.scripted import ScriptedBackend


def _menu_texts(h) -> dict[str, list[tuple[str, str]]]:  # type: ignore[no-untyped-def]
    out: dict[str, list[tuple[str, str]]] = {}
    for menu_action in h.window.menuBar().actions():
        menu = menu_action.menu()
        out[menu_action.text().replace("&", "")] = [
            (a.text().replace("&", "").split("\t")[0],
             a.shortcut().toString(QKeySequence.SequenceFormat.PortableText))
            for a in menu.actions() if not a.isSeparator()
        ]
    return out


def test_the_menus_hold_the_usual_commands_and_shortcuts(make_window, artifacts_dir) -> None:
    h = make_window()
    menus = _menu_texts(h)
    assert list(menus) == ["File", "Edit", "Chat", "View", "Tools", "Help"]
    assert ("New chat", "Ctrl+N") in menus["File"]
    assert ("Export…", "Ctrl+Shift+E") in menus["File"]
    assert ("Quit", "Ctrl+Q") in menus["File"]
    assert [t for t, _ in menus["Edit"]][:2] == ["Copy chat", "Delete last message"]
    chat = dict(menus["Chat"])
    assert chat["Rename…"] == "F2" and "Delete chat" in chat
    assert chat["Continue generation"] == "Ctrl+Shift+Return"
    assert chat["Regenerate"] == "Ctrl+Shift+R"
    assert dict(menus["View"]) == {
        "Zoom in": "Ctrl+=", "Zoom out": "Ctrl+-", "Reset zoom": "Ctrl+0"
    }
    assert menus["Tools"] == [("Models…", "Ctrl+M"), ("Settings…", "Ctrl+,")]
    assert menus["Help"] == [("Short guide", "F1"), ("Keyboard shortcuts", ""),
                             ("About Offline Assistant", "")]
    # nothing to export, copy, continue or delete in an empty chat: greyed out
    m = h.window.menus
    assert not m.export.isEnabled() and not m.continue_generation.isEnabled()
    file_menu = h.window.menuBar().actions()[0].menu()
    file_menu.popup(h.window.mapToGlobal(h.window.menuBar().geometry().bottomLeft()))
    h.qtbot.waitUntil(file_menu.isVisible)
    h.qtbot.wait(100)
    assert h.window.grab().save(str(artifacts_dir / "menu-bar-window.png"))
    assert file_menu.grab().save(str(artifacts_dir / "menu-bar-file.png"))
    file_menu.hide()
    chat_menu = h.window.menuBar().actions()[2].menu()
    chat_menu.popup(h.window.mapToGlobal(h.window.menuBar().geometry().bottomLeft()))
    h.qtbot.waitUntil(chat_menu.isVisible)
    assert chat_menu.grab().save(str(artifacts_dir / "menu-bar-chat.png"))
    chat_menu.hide()


def test_ctrl_q_quits(make_window) -> None:
    h = make_window()
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    h.qtbot.waitUntil(lambda: not h.window.isVisible())


def test_zoom_keys_change_the_text_size_and_it_is_kept_across_a_restart(
    make_window, artifacts_dir
) -> None:
    reply = "Here is `code` and text:\n\n```python\nprint(1)\n```"
    h = make_window(backend=ScriptedBackend([reply]))
    h.type_and_send("Zoom test")
    h.wait_idle()
    size = h.window.input.font().pointSizeF()
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert h.controller.settings.zoom == 125
    assert h.window.input.font().pointSizeF() > size
    assert h.window.chat_view.zoom == 125
    code = next(w for w in h.window.chat_view.findChildren(QPlainTextEdit)
                if "print(1)" in w.toPlainText())
    mono = code.font().pointSizeF()
    assert mono > monospace_font().pointSizeF()  # code is zoomed too
    h.backend.enqueue("More:\n\n```python\nprint(2)\n```")
    h.type_and_send("again")  # a code block streamed in at this zoom gets its size too
    h.wait_idle()
    later = next(w for w in h.window.chat_view.findChildren(QPlainTextEdit)
                 if "print(2)" in w.toPlainText())
    assert abs(later.font().pointSizeF() - mono) < 0.01
    assert load_settings().settings.zoom == 125  # saved
    h.qtbot.wait(100)
    assert h.window.grab().save(str(artifacts_dir / "zoom-125.png"))
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert h.controller.settings.zoom == 110
    h.window.close()
    again = make_window(settings=load_settings().settings)  # a restart
    assert again.window.chat_view.zoom == 110
    assert again.window.input.font().pointSizeF() > size
    again.qtbot.keyClick(again.window.input, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert again.controller.settings.zoom == 100
    assert abs(again.window.input.font().pointSizeF() - size) < 0.01


def test_continue_generation_extends_the_last_reply_as_its_next_version(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["Once upon a"]))
    h.type_and_send("Tell me a story")
    h.wait_idle()
    first = h.controller.chat.conversation.messages[-1]
    assert h.window.menus.continue_generation.isEnabled()
    h.backend.enqueue("time, there was a llama.")
    h.qtbot.keyClick(
        h.window.input, Qt.Key.Key_Return,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    h.wait_idle()
    messages = h.controller.chat.conversation.messages
    assert [m.content for m in messages] == [
        "Tell me a story", "Once upon a time, there was a llama."
    ]
    sent = h.backend.calls[-1].messages
    assert sent[-1]["content"].startswith(CONTINUE_REQUEST)  # asked, never saved
    assert sent[-2]["content"] == "Once upon a"
    # the old reply stays as version 1 of 2
    assert h.controller.chat.branch_info(messages[-1].id) == (2, 2)
    assert h.controller.chat.branch_info(first.id) == (1, 2)
    shown = [w.message.content for w in h.window.chat_view.entries()
             if isinstance(w, MessageWidget)]
    assert shown == ["Tell me a story", "Once upon a time, there was a llama."]
    assert h.window.chat_view.message_widgets[messages[-1].id].footer.text()


def test_the_chat_menu_regenerates_renames_and_deletes_the_open_chat(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["first answer", "second answer"]))
    h.type_and_send("Plan my trip")
    h.wait_idle()
    chat_id = h.controller.chat.chat_id
    ctrl_shift = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_R, ctrl_shift)  # Chat → Regenerate
    h.wait_idle()
    messages = h.controller.chat.conversation.messages
    assert [m.content for m in messages] == ["Plan my trip", "second answer"]
    assert h.controller.chat.branch_info(messages[-1].id) == (2, 2)
    # no stray window flashed up and took the keyboard (a "< 1/2 >" switcher shown before it
    # had a parent did): what the user types next still goes to the message box
    assert QApplication.activeWindow() is h.window
    assert QApplication.focusWidget() is h.window.input
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_F2)  # Chat → Rename…
    dialogs = [d for d in h.window.findChildren(QInputDialog) if d.isVisible()]
    assert len(dialogs) == 1 and dialogs[0].textValue() == "Plan my trip"
    dialogs[0].setTextValue("Lisbon in May")
    dialogs[0].accept()
    assert h.window.sidebar.titles() == ["Lisbon in May"]
    h.window.menus.delete_chat.trigger()  # Chat → Delete chat, with Undo
    assert h.controller.chat.chat_id is None and h.window.sidebar.titles() == []
    assert h.window.sidebar.undo_bar.isVisible()
    h.qtbot.mouseClick(h.window.sidebar.undo_button, Qt.MouseButton.LeftButton)
    assert [(c.id, c.title) for c in h.controller.store.list_chats()] == [
        (chat_id, "Lisbon in May")
    ]


def test_deleting_a_message_goes_on_without_it_and_keeps_the_old_version(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["answer one", "answer two"]))
    h.type_and_send("question one")
    h.wait_idle()
    h.type_and_send("question two")
    h.wait_idle()
    first_answer = h.controller.chat.conversation.messages[1]
    widget = h.window.chat_view.message_widgets[first_answer.id]
    h.qtbot.mouseClick(widget.delete_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    texts = [m.content for m in h.controller.chat.conversation.messages]
    assert texts == ["question one", "question two", "answer two"]
    shown = [w.message.content for w in h.window.chat_view.entries()
             if isinstance(w, MessageWidget)]
    assert shown == texts
    second_question = h.controller.chat.conversation.messages[1]
    switcher = h.window.chat_view.message_widgets[second_question.id].branch_switcher
    # a widget added to a shown layout is shown on the next turn of the event loop
    h.qtbot.waitUntil(lambda: switcher.isVisibleTo(h.window))
    assert switcher.isVisibleTo(h.window) and switcher.label.text() == "2/2"
    # Edit → Delete last message
    h.window.menus.delete_message.trigger()
    h.wait_idle()
    assert [m.content for m in h.controller.chat.conversation.messages] == [
        "question one", "question two"
    ]


def test_copy_chat_puts_the_whole_chat_on_the_clipboard(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["first reply", "second reply"]))
    h.type_and_send("hello")
    h.wait_idle()
    h.type_and_send("again")
    h.wait_idle()
    h.qtbot.keyClick(
        h.window.input, Qt.Key.Key_C,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    text = QGuiApplication.clipboard().text()
    for part in ("hello", "first reply", "again", "second reply"):
        assert part in text


def test_export_from_the_menu_writes_json_with_the_users_question(
    make_window, tmp_path: Path
) -> None:
    h = make_window(backend=ScriptedBackend(["It is read."]))
    workspace = h.controller.settings.workspace_path()
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "six.txt").write_text("".join(f"line {i}\n" for i in range(1, 7)))
    h.type_and_send("/read six.txt")
    h.wait_idle()
    h.type_and_send("What is in it?")
    h.wait_idle()
    card = next(iter(h.window.chat_view.cards.values()))
    assert card.header.text().endswith("— 6 lines")  # the file's lines, as the export says
    h.qtbot.keyClick(
        h.window.input, Qt.Key.Key_E,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    dialog = h.window.export_dialog
    assert isinstance(dialog, QFileDialog) and dialog.isVisible()
    assert dialog.nameFilters() == ["Markdown (*.md)", "OpenAI JSON (*.json)"]
    dialog.selectNameFilter("OpenAI JSON (*.json)")
    target = tmp_path / "chat"
    dialog.fileSelected.emit(str(target))
    written = tmp_path / "chat.json"
    h.qtbot.waitUntil(written.exists)
    data = json.loads(written.read_text(encoding="utf-8"))
    meta = [a for a in data["annotations"] if a["type"] == "message_meta"]
    roles = [m["role"] for m in data["messages"]]
    typed = roles.index("user")
    assert meta[typed]["initiated_by"] == "user"
    tool = next(m for m in data["messages"] if m["role"] == "tool")
    assert tool["content"].splitlines()[0] == "six.txt (6 lines)"
    dialog.close()


def test_export_target_takes_the_format_from_the_filter() -> None:
    assert export_target(Path("/x/chat"), "OpenAI JSON (*.json)") == Path("/x/chat.json")
    assert export_target(Path("/x/chat"), "Markdown (*.md)") == Path("/x/chat.md")
    assert export_target(Path("/x/chat.md"), "OpenAI JSON (*.json)") == Path("/x/chat.md")
