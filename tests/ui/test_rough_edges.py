"""The rough edges of issue 17: pasted text keeps its lines, a streaming code block never
flashes as a big empty box, /help's columns line up, /export offers the chat's title in the
documents folder and says which tools the user ran, and a restart reopens the last chat."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QToolButton

from assistant import paths
from assistant.config import Settings
from assistant.sessions.store import SessionStore
from assistant.ui.markdown_view import MarkdownView
from assistant.ui.message_widgets import MessageWidget
from assistant.ui.notices import NoticeWidget
from assistant.ui.theme import monospace_font
from tests.fakes.scripted import ScriptedBackend

LOG = "\n".join(
    f"2026-11-23 10:{i:02d}:00 INFO # worker-{i % 3} - served /api/items in {i * 7} ms"
    for i in range(150)
)


def test_pasted_lines_stay_lines_in_the_users_bubble(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["The slowest request took 1,043 ms."]))
    w = h.window
    QGuiApplication.clipboard().setText(LOG)
    w.input.setFocus()
    h.qtbot.keyClick(w.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert w.input.toPlainText() == LOG
    h.qtbot.keyClick(w.input, Qt.Key.Key_Return)
    h.wait_idle()
    user = next(e for e in w.chat_view.entries() if isinstance(e, MessageWidget))
    assert user.message.content == LOG
    [prose] = user.body.prose_labels()
    assert prose.textFormat() == Qt.TextFormat.PlainText
    assert prose.text() == LOG  # not one run-on paragraph, no Markdown headings or lists
    line = prose.fontMetrics().lineSpacing()
    assert prose.heightForWidth(900) >= 150 * line


def test_a_code_block_that_has_just_opened_is_one_line_high(qtbot) -> None:
    view = MarkdownView("Here is the script:\n```python\n")
    qtbot.addWidget(view)
    view.resize(600, 400)
    [block] = view.code_blocks()
    line = block.editor.fontMetrics().lineSpacing()
    assert block.editor.height() < 3 * line  # before: the default ~190 px empty box
    view.set_markdown("Here is the script:\n```python\nprint('hi')\nprint('there')\n")
    assert block.editor.height() < 4 * line
    assert block.code.rstrip("\n") == "print('hi')\nprint('there')"


def test_help_columns_line_up(make_window) -> None:
    h = make_window()
    h.type_and_send("/help")
    notice = next(e for e in h.window.chat_view.entries() if isinstance(e, NoticeWidget))
    assert "/read PATH [START-END]" in notice.text
    usage = next(u for u, _d in notice.cells if u.text() == "/read PATH [START-END]")
    assert usage.font().family() == monospace_font().family()
    metrics = usage.fontMetrics()
    assert metrics.horizontalAdvance("iiiiiiii") == metrics.horizontalAdvance("WWWWWWWW")


def test_export_offers_the_title_in_documents_and_names_the_users_tools(
    make_window, tmp_path: Path, artifacts_dir: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "plan.txt").write_text("1. pack\n2. go\n", encoding="utf-8")
    h = make_window(
        backend=ScriptedBackend(["Pack first, then go."]), settings=Settings(workspace=str(ws))
    )
    w = h.window
    h.type_and_send("/read plan.txt")
    h.wait_idle()
    h.type_and_send("What is step one?")
    h.wait_idle()
    chat_id = h.controller.chat.chat_id
    assert chat_id is not None
    h.controller.chat.rename(chat_id, "Trip: plan / packing?")
    paths.documents_dir().mkdir(parents=True)
    h.type_and_send("/export")
    dialog = w.export_dialog
    assert isinstance(dialog, QFileDialog) and dialog.isVisible()
    assert Path(dialog.directory().absolutePath()) == paths.documents_dir()
    [selected] = dialog.selectedFiles()
    assert Path(selected).name == "Trip plan packing.md"
    h.qtbot.wait(150)
    assert dialog.grab().save(str(artifacts_dir / "export-dialog.png"))
    # The toolbar's icons show (the app's button padding used to squeeze them out).
    buttons = [
        b for b in dialog.findChildren(QToolButton) if b.isVisible() and not b.icon().isNull()
    ]
    assert len(buttons) >= 4
    for button in buttons:
        image = button.grab().toImage()
        cx, cy = image.width() // 2, image.height() // 2
        centre = [
            QColor(image.pixel(x, y)).lightness()
            for x in range(max(0, cx - 6), min(image.width(), cx + 7))
            for y in range(max(0, cy - 6), min(image.height(), cy + 7))
        ]
        assert min(centre) < 150, f"no icon drawn on {button.toolTip() or button.objectName()}"
    dialog.accept()
    written = paths.documents_dir() / "Trip plan packing.md"
    h.qtbot.waitUntil(written.exists)
    md = written.read_text(encoding="utf-8")
    assert "### User" in md and "You ran `read_file`" in md
    assert "### Tool result: read_file (you ran it)" in md
    assert "Assistant · " in md and "Pack first, then go." in md
    assert "**Tool call**" not in md  # the model called no tool


def test_a_restart_reopens_the_last_chat(make_window, qtbot) -> None:
    from assistant.app import build_main_window

    h = make_window(backend=ScriptedBackend(["Noted."]))
    h.type_and_send("Remember the blue folder")
    h.wait_idle()
    chat_id = h.controller.chat.chat_id
    h.window.close()
    h.window.shutdown()
    again = build_main_window(Settings(), lambda *_a: ScriptedBackend(), SessionStore())
    qtbot.addWidget(again)
    try:
        assert again.service.chat.chat_id == chat_id
        shown = [e.message.content for e in again.chat_view.entries()
                 if isinstance(e, MessageWidget)]
        assert shown == ["Remember the blue folder", "Noted."]
        assert again.transcript.currentWidget() is again.chat_view
    finally:
        again.close()
        again.shutdown()
