"""Every control a user can reach has a name assistive technology reads out (its text, or
an accessible name given where it has none): the main window in use, the welcome page, the
Models window, the chat's options and the settings dialog."""

from __future__ import annotations

from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QTextEdit,
    QWidget,
)

from tests.fakes.scripted import ScriptedBackend

CONTROLS = (
    QAbstractButton,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QComboBox,
    QAbstractSpinBox,
    QAbstractItemView,
    QProgressBar,
)


def _inside_combo_box(widget: QWidget) -> bool:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QComboBox):
            return True
        parent = parent.parentWidget()
    return False


def unnamed(root: QWidget) -> list[str]:
    """Controls under ``root`` (shown or not) with no accessible name."""
    missing: list[str] = []
    for widget in [root, *root.findChildren(QWidget)]:
        if not isinstance(widget, CONTROLS) or widget.objectName().startswith("qt_"):
            continue
        if _inside_combo_box(widget):
            continue  # a combo box's own popup list (the combo box carries the name)
        iface = QAccessible.queryAccessibleInterface(widget)
        name = iface.text(QAccessible.Text.Name) if iface is not None else ""
        if not name.strip():
            parent = widget.parentWidget()
            where = type(parent).__name__ if parent is not None else "-"
            missing.append(f"{type(widget).__name__} '{widget.objectName()}' in {where}")
    return missing


def test_every_control_has_a_name(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["Here:\n```python\nprint(1)\n```\n"]))
    w = h.window
    assert unnamed(w) == []  # the welcome page, sidebar, composer, status bar
    h.type_and_send("Show me code")
    h.wait_idle()
    h.type_and_send("/ls")
    h.wait_idle()
    assert unnamed(w) == []  # messages, their actions, code blocks, tool cards
    switcher = next(iter(w.chat_view.message_widgets.values())).branch_switcher
    assert switcher.prev_button.accessibleName() == "Show the previous version"
    for dialog in (w.open_models(), w.open_chat_options(), w.open_settings()):
        assert unnamed(dialog) == [], type(dialog).__name__
        dialog.close()
