"""One zoom for the whole window (issue 43, item 2): Ctrl+= scales the text of every widget
(menus, the chat list, buttons, messages, their footers, the status bar, code), code blocks
stay whole with a scroll bar for long lines, and Ctrl+0 puts everything back."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from assistant.ui.markdown_view import CodeBlock
from tests.fakes.scripted import ScriptedBackend

LONG_LINE = "result = compute_the_total_of_every_invoice(" + ", ".join(
    f"argument_{i}" for i in range(12)) + ")"
REPLY = ("Here is the code you asked for, explained in a sentence or two.\n\n```python\n"
         + "\n".join(f"line_{i} = {i}" for i in range(6)) + "\n" + LONG_LINE + "\n```")


def _sizes(h) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The text size of one widget of each kind the user sees."""
    w = h.window
    msg = list(w.chat_view.message_widgets.values())[-1]
    widgets: dict[str, QWidget] = {
        "menu bar": w.menuBar(), "chat list": w.sidebar.list, "new chat": w.sidebar.new_button,
        "send": w.send_button, "input": w.input, "status": w.status_label,
        "message": msg.body.prose_labels()[0], "role": msg.role_label,
        "footer": msg.footer, "copy": msg.copy_button,
        "code": msg.body.code_blocks()[0].editor,
    }
    return {name: widget.font().pointSizeF() for name, widget in widgets.items()}


def _code_is_whole(block: CodeBlock) -> None:
    editor = block.editor
    lines = block.code.count("\n") + 1
    needed = lines * editor.fontMetrics().lineSpacing()
    bar = editor.horizontalScrollBar()
    assert bar.maximum() > 0 and bar.isVisible(), "a long line gets a scroll bar"
    assert editor.viewport().height() >= needed, (editor.viewport().height(), needed)


def test_ctrl_plus_zooms_every_widget_and_ctrl_0_resets(make_window, artifacts_dir: Path
                                                          ) -> None:
    h = make_window(backend=ScriptedBackend([REPLY]))
    h.window.resize(900, 700)
    h.type_and_send("Show me the code")
    h.wait_idle()
    h.qtbot.wait(50)
    before = _sizes(h)
    for _ in range(3):
        h.qtbot.keyClick(h.window.input, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert h.controller.settings.zoom == 150
    h.qtbot.wait(100)
    after = _sizes(h)
    for name, size in before.items():
        assert abs(after[name] / size - 1.5) < 0.05, (name, size, after[name])
    block = list(h.window.chat_view.message_widgets.values())[-1].body.code_blocks()[0]
    _code_is_whole(block)
    assert h.window.grab().save(str(artifacts_dir / "zoom-150-whole-window.png"))
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert h.controller.settings.zoom == 100
    h.qtbot.wait(50)
    assert _sizes(h) == before
    _code_is_whole(block)


def test_a_reply_written_while_zoomed_is_zoomed_too(make_window) -> None:
    h = make_window(backend=ScriptedBackend([REPLY, REPLY]))
    h.type_and_send("first")
    h.wait_idle()
    before = _sizes(h)
    h.window.menus.zoom_in.trigger()
    h.window.menus.zoom_in.trigger()
    assert h.controller.settings.zoom == 125
    h.type_and_send("second")
    h.wait_idle()
    h.qtbot.wait(50)
    after = _sizes(h)  # the newest message: built at 125 %
    for name, size in before.items():
        assert abs(after[name] / size - 1.25) < 0.05, (name, size, after[name])
