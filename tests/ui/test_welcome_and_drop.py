"""First run: the welcome page (what the app does, the workspace with Open and Change, how
to add files, example prompts), files dropped on the window, and the keyboard focus going
back to the input after clicks."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QLabel, QWidget

from assistant.config import Settings
from assistant.llm.registry import load_registry
from assistant.ui.message_widgets import MessageWidget
from assistant.ui.tool_card import ToolCard
from assistant.ui.welcome_view import EXAMPLE_PROMPTS
from tests.fakes.scripted import ScriptedBackend


def _file_mime(*paths: Path) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    return mime


def drop_files(target: QWidget, *paths: Path) -> bool:
    """Drag files over ``target`` and drop them, as a file manager would."""
    mime = _file_mime(*paths)
    pos = QPointF(target.width() / 2, target.height() / 2)
    enter = QDragEnterEvent(
        pos, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier(0)
    )
    QApplication.sendEvent(target, enter)
    if not enter.isAccepted():
        return False
    drop = QDropEvent(
        pos, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier(0),
    )
    QApplication.sendEvent(target, drop)
    return drop.isAccepted()


def test_a_new_chat_shows_the_welcome_page(make_window, tmp_path: Path, artifacts_dir) -> None:
    workspace = tmp_path / "My workspace"
    h = make_window(settings=Settings(workspace=str(workspace)))
    w = h.window
    w.resize(1180, 800)
    h.qtbot.wait(100)
    assert w.transcript.currentWidget() is w.welcome
    assert w.welcome.isVisible()
    assert w.welcome.workspace_label.full_text == str(workspace)
    text = " ".join(
        label.text() for label in w.welcome.findChildren(QLabel)
    )
    assert "runs a small language model on this computer" in text
    assert "Drop a file onto this window" in text and "/&#8288;read" in text
    assert [b.text() for b in w.welcome.example_buttons] == list(EXAMPLE_PROMPTS)
    # Issue 45: which models are here and what each does well, the one in use first.
    lines = [label.text() for label in w.welcome.model_lines]
    in_use = w.service.settings.model
    assert lines[0].startswith(load_registry().get(in_use).display_name + " (in use): ")
    assert any(line.startswith("Qwen2.5 Coder 1.5B Instruct (Q4_K_M)") and
               "writes files" in line for line in lines)
    for line in lines:  # what each does with files is said once
        assert line.count("/read") <= 1 and line.count("files for you") <= 1, line
    assert lines[-1] == "Models (Ctrl+M) installs, adds and switches models."
    assert w.grab().save(str(artifacts_dir / "welcome-view.png"))


def test_the_welcome_page_fits_a_narrow_window(make_window, artifacts_dir) -> None:
    """At 700 pixels the chat area is about 440 wide: the page wraps into it (nothing cut at
    the right edge), and each example prompt shows its whole text over as many lines as it
    needs."""
    h = make_window()
    w = h.window
    w.resize(700, 640)
    h.qtbot.wait(100)
    page = w.welcome
    inner = page.widget()
    assert inner.width() <= page.viewport().width()
    for button in page.example_buttons:
        assert button.geometry().right() <= inner.width()
        assert button.height() >= button.heightForWidth(button.width())
    # The longest prompt no longer fits on one line: it wraps instead of widening the page.
    assert max(b.height() for b in page.example_buttons) > min(
        b.height() for b in page.example_buttons
    )
    for label in inner.findChildren(QLabel):
        if label.isVisible():
            right = label.mapTo(inner, label.rect().topRight()).x()
            assert right <= page.viewport().width(), label.text()[:40]
    assert w.grab().save(str(artifacts_dir / "welcome-narrow.png"))


def test_an_example_prompt_is_sent_with_one_click(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["A context window is what the model sees."]))
    w = h.window
    h.qtbot.mouseClick(w.welcome.example_buttons[0], Qt.MouseButton.LeftButton)
    h.wait_idle()
    assert w.transcript.currentWidget() is w.chat_view
    assert h.controller.chat.conversation.messages[0].content == EXAMPLE_PROMPTS[0]
    h.qtbot.waitUntil(
        lambda: [e.message.role for e in w.chat_view.entries() if isinstance(e, MessageWidget)]
        == ["user", "assistant"]
    )
    # A new, empty chat shows the welcome page again.
    h.qtbot.mouseClick(w.sidebar.new_button, Qt.MouseButton.LeftButton)
    assert w.transcript.currentWidget() is w.welcome


def test_open_and_change_the_workspace(make_window, tmp_path: Path) -> None:
    h = make_window(settings=Settings(workspace=str(tmp_path / "ws")))
    w = h.window
    opened: list[str] = []
    w.open_url = lambda url: opened.append(url.toLocalFile()) or True  # type: ignore[method-assign]
    h.qtbot.mouseClick(w.welcome.open_button, Qt.MouseButton.LeftButton)
    assert opened == [str(tmp_path / "ws")]
    assert (tmp_path / "ws").is_dir()  # created so the file manager has something to open

    other = tmp_path / "notes"
    other.mkdir()
    h.qtbot.mouseClick(w.welcome.change_button, Qt.MouseButton.LeftButton)
    dialog = w.workspace_dialog
    assert isinstance(dialog, QFileDialog) and dialog.isVisible()
    dialog.selectFile(str(other))
    dialog.accept()
    h.qtbot.waitUntil(lambda: h.controller.settings.workspace == str(other))
    assert w.welcome.workspace_label.full_text == str(other)


def test_a_file_dropped_on_the_window_is_copied_into_the_workspace_and_read(
    make_window, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    elsewhere = tmp_path / "downloads"
    elsewhere.mkdir()
    report = elsewhere / "report.txt"
    report.write_text("Quarterly numbers: up 4%.\n", encoding="utf-8")
    h = make_window(settings=Settings(workspace=str(workspace)))
    w = h.window
    assert drop_files(w.chat_view.viewport(), report)
    h.wait_idle()
    assert (workspace / "dropped" / "report.txt").read_text(encoding="utf-8") == report.read_text()
    tool = h.controller.chat.conversation.messages[-1]
    assert tool.role == "tool" and "Quarterly numbers" in tool.content
    assert tool.initiated_by == "user"
    assert any(isinstance(e, ToolCard) for e in w.chat_view.entries()) or any(
        e.cards for e in w.chat_view.entries() if isinstance(e, MessageWidget)
    )
    assert w.input.toPlainText() == ""  # the input never got the URL as text


def test_files_dropped_on_the_input_are_read_in_order_not_pasted(
    make_window, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = workspace / "a.txt"
    first.write_text("alpha\n", encoding="utf-8")
    second = tmp_path / "b.txt"
    second.write_text("beta\n", encoding="utf-8")
    h = make_window(settings=Settings(workspace=str(workspace)))
    assert drop_files(h.window.input.viewport(), first, second)
    h.wait_idle()
    tools = [m for m in h.controller.chat.conversation.messages if m.role == "tool"]
    assert [t.content.strip().splitlines()[-1] for t in tools] == ["alpha", "beta"]
    assert h.window.input.toPlainText() == ""


def test_a_drag_without_files_is_not_taken(make_window) -> None:
    h = make_window()
    mime = QMimeData()
    mime.setText("just text")
    enter = QDragEnterEvent(
        QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier(0),
    )
    QApplication.sendEvent(h.window.chat_view.viewport(), enter)
    assert not h.window.drop_handler.overlay.isVisible()


def test_clicking_a_tool_card_gives_the_focus_back_to_the_input(
    make_window, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    h = make_window(settings=Settings(workspace=str(workspace)))
    w = h.window
    # (typed without key presses: the offscreen platform leaves the command popup active)
    w.input.setPlainText("/read notes.txt")
    h.qtbot.keyClick(w.input, Qt.Key.Key_Return)
    h.wait_idle()
    card = next(iter(w.chat_view.cards.values()))
    h.qtbot.mouseClick(card.header, Qt.MouseButton.LeftButton)
    assert card.expanded
    h.qtbot.waitUntil(lambda: w.input.hasFocus())
    h.qtbot.keyClicks(QApplication.focusWidget(), "what is in it?")
    assert w.input.toPlainText() == "what is in it?"
    # A click in the search field keeps the focus there (it is a text field).
    h.qtbot.mouseClick(w.sidebar.search, Qt.MouseButton.LeftButton)
    h.qtbot.wait(50)
    assert w.sidebar.search.hasFocus()
