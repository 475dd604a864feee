"""After a click on anything that is not a text field, typing goes to the message input
(a click on a tool card or a Copy button used to keep the focus, and the next thing typed
was lost). Editable fields, selected text, dialogs and popups keep the focus.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)


def keeps_focus(widget: QWidget | None) -> bool:
    """Whether ``widget`` should keep the focus a click gave it."""
    if widget is None:
        return False
    if isinstance(widget, QLineEdit | QAbstractSpinBox) or (
        isinstance(widget, QComboBox) and widget.isEditable()
    ):
        return True
    if isinstance(widget, QPlainTextEdit | QTextEdit):
        return not widget.isReadOnly() or widget.textCursor().hasSelection()
    if isinstance(widget, QLabel):
        return widget.hasSelectedText()
    return False


class FocusKeeper(QObject):
    """Installed on the application; acts only on clicks inside ``window``."""

    def __init__(self, window: QWidget, target: QWidget) -> None:
        super().__init__(window)
        self._window = window
        self._target = target
        self._pending = False
        self._clicked: QWidget | None = None

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.MouseButtonRelease
            and isinstance(obj, QWidget)
            and obj.window() is self._window
            and not self._pending
        ):
            self._pending = True
            self._clicked = obj
            QTimer.singleShot(0, self._restore)
        return False

    def _restore(self) -> None:
        self._pending = False
        clicked, self._clicked = self._clicked, None
        app = QApplication.instance()
        if not isinstance(app, QApplication):
            return
        if app.activeModalWidget() is not None or app.activePopupWidget() is not None:
            return
        focus = app.focusWidget()
        if focus is self._target or (focus is not None and focus.window() is not self._window):
            return
        if keeps_focus(focus) or (isinstance(clicked, QLabel) and keeps_focus(clicked)):
            return
        if self._target.isEnabled() and self._target.isVisible():
            self._target.setFocus()
