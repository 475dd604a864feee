"""What "nothing clipped" means on screen, checked widget by widget: each shown widget lies
inside its parent (inside a scroll area: across, the rows scroll up and down), a one-line
label or a button is as wide as its text needs, and a wrapping label as tall as its lines.
A label that elides on purpose (``ElidedLabel``, the whole text in its tooltip) is exempt."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QLabel,
    QMainWindow,
    QMenuBar,
    QPlainTextEdit,
    QWidget,
)

from assistant.ui.parts import ElidedLabel
from assistant.ui.wrap_button import FittedButton, FittedLabel, WrapButton


def _scrolled(widget: QWidget) -> bool:
    """``widget`` is the content of a scroll area (it may be taller than what is shown)."""
    viewport = widget.parentWidget()
    area = viewport.parentWidget() if viewport is not None else None
    return isinstance(area, QAbstractScrollArea) and area.viewport() is viewport


def _outside(widget: QWidget) -> str | None:
    parent = widget.parentWidget()
    if parent is None:
        return None
    g = widget.geometry()
    if g.left() < 0 or g.right() > parent.width() - 1:
        return f"x {g.left()}..{g.right()} outside 0..{parent.width() - 1}"
    if not _scrolled(widget) and (g.top() < 0 or g.bottom() > parent.height() - 1):
        return f"y {g.top()}..{g.bottom()} outside 0..{parent.height() - 1}"
    return None


def _cut_text(widget: QWidget) -> str | None:
    if isinstance(widget, ElidedLabel | FittedLabel | FittedButton):
        return None  # they elide on purpose, the whole text in their tooltip
    if isinstance(widget, QLabel) and widget.text():
        inner = widget.contentsRect()
        if widget.wordWrap():
            needed = widget.heightForWidth(widget.width())
            if needed > widget.height() + 1:
                return f"wrapped text needs {needed} px high, has {widget.height()}"
        elif widget.sizeHint().width() > widget.width() + 1:
            return f"text needs {widget.sizeHint().width()} px wide, has {inner.width()}"
    if isinstance(widget, QPlainTextEdit) and not widget.toPlainText() \
            and widget.placeholderText():
        room = widget.viewport().contentsRect()
        margin = int(widget.document().documentMargin())
        box = widget.fontMetrics().boundingRect(
            QRect(0, 0, room.width() - 2 * margin, 100_000), Qt.TextFlag.TextWordWrap,
            widget.placeholderText())
        if box.height() > room.height() - 2 * margin + 1:
            return f"hint needs {box.height()} px high, has {room.height() - 2 * margin}"
    # (a WrapButton's text is a wrapping label, checked as one)
    button = isinstance(widget, QAbstractButton) and not isinstance(widget, WrapButton)
    if button and widget.text() and widget.sizeHint().width() > widget.width() + 1:
        return f"button needs {widget.sizeHint().width()} px wide, has {widget.width()}"
    return None


def clipped(window: QMainWindow) -> list[str]:
    """Every shown widget of ``window`` that is cut off, and how."""
    problems: list[str] = []
    for widget in window.findChildren(QWidget):
        if widget.isWindow() or not widget.isVisibleTo(window):
            continue
        if isinstance(widget.parentWidget(), QMenuBar):  # its own overflow button ">>"
            continue
        why = _outside(widget) or _cut_text(widget)
        if why is not None:
            text = widget.text() if isinstance(widget, QLabel | QAbstractButton) else ""
            problems.append(
                f"{type(widget).__name__}#{widget.objectName()} {text[:40]!r}: {why}")
    return problems
