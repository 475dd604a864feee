"""The message input: Enter sends, Shift+Enter adds a line (or the other way round).

With ``enter_sends`` off, Ctrl+Enter sends and Enter adds a line. Up in an empty input asks
to edit the last message; Esc is reported so the window can stop a reply, cancel a
compaction or leave edit mode. The box grows with its text up to eight lines.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import QFrame, QPlainTextEdit, QSizePolicy, QWidget

from assistant.ui.slash_completer import SlashCompleter

MAX_LINES = 8


class ChatInput(QPlainTextEdit):
    submitted = Signal(str)
    edit_last_requested = Signal()
    escape_pressed = Signal()
    #: The text now, on every change (the service reads the message ahead as it is typed).
    draft_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None, enter_sends: bool = True) -> None:
        super().__init__(parent)
        self.setObjectName("ChatInput")
        self.setAccessibleName("Message")
        self.enter_sends = enter_sends
        self.setTabChangesFocus(True)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.completer = SlashCompleter(self)
        self.document().documentLayout().documentSizeChanged.connect(self._fit)
        self.textChanged.connect(lambda: self.draft_changed.emit(self.toPlainText()))
        self.textChanged.connect(self._fit)  # empty: the hint's lines; typed: the text's
        self._update_placeholder()
        self._fit()

    def changeEvent(self, event: QEvent) -> None:
        """The box's height follows its font (the window's zoom)."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit()

    def set_enter_sends(self, enter_sends: bool) -> None:
        self.enter_sends = enter_sends
        self._update_placeholder()

    def _update_placeholder(self) -> None:
        keys = ("Enter to send, Shift+Enter for a new line" if self.enter_sends
                else "Ctrl+Enter to send, Enter for a new line")
        full = f"Message the assistant… ({keys}; / for commands)"
        width = max(1, self.viewport().width() - int(self.document().documentMargin() * 2))
        box = self.fontMetrics().boundingRect(
            QRect(0, 0, width, 100_000), Qt.TextFlag.TextWordWrap, full)
        fits = box.height() <= 2 * self.fontMetrics().lineSpacing()
        self.setPlaceholderText(full if fits else "Message the assistant…")
        self.setToolTip("" if fits else full)
        self._fit()

    def sizeHint(self) -> QSize:
        return QSize(400, self._height_for_lines())

    def _lines(self) -> int:
        """The lines shown: the text's, or while empty the hint's (wrapped in a narrow
        window), at most :data:`MAX_LINES`."""
        lines = int(self.document().size().height())
        hint = self.placeholderText()
        if not self.toPlainText() and hint:
            width = max(1, self.viewport().width() - int(self.document().documentMargin() * 2))
            box = self.fontMetrics().boundingRect(
                QRect(0, 0, width, 100_000), Qt.TextFlag.TextWordWrap, hint)
            lines = max(lines, -(-box.height() // max(1, self.fontMetrics().lineSpacing())))
        return max(1, min(MAX_LINES, lines))

    def resizeEvent(self, event: QResizeEvent) -> None:
        """A new width may wrap the hint onto another line (or leave no room for the
        whole of it: then the short one), fitted once this resize is over."""
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            QTimer.singleShot(0, self, self._update_placeholder)

    def _height_for_lines(self) -> int:
        lines = self._lines()
        margins = self.contentsMargins()
        doc_margin = int(self.document().documentMargin() * 2)
        chrome = doc_margin + margins.top() + margins.bottom() + 16
        return lines * self.fontMetrics().lineSpacing() + chrome

    def _fit(self) -> None:
        overflow = int(self.document().size().height()) > MAX_LINES
        policy = Qt.ScrollBarPolicy
        self.setVerticalScrollBarPolicy(
            policy.ScrollBarAsNeeded if overflow else policy.ScrollBarAlwaysOff
        )
        self.setFixedHeight(self._height_for_lines())

    def event(self, event: QEvent) -> bool:
        # Tab would move the focus before keyPressEvent sees it; with the popup open it
        # inserts the chosen command instead.
        if (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Tab
            and self.completer.handle_key(event)
        ):
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self.completer.handle_key(event):
            return
        key = event.key()
        mods = event.modifiers()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
            ctrl = bool(mods & Qt.KeyboardModifier.ControlModifier)
            send = (not shift and not ctrl) if self.enter_sends else ctrl
            if send:
                self.submit()
                return
            self.insertPlainText("\n")
            return
        if key == Qt.Key.Key_Up and not self.toPlainText():
            self.edit_last_requested.emit()
            return
        if key == Qt.Key.Key_Escape:
            self.escape_pressed.emit()
            return
        super().keyPressEvent(event)

    def submit(self) -> None:
        text = self.toPlainText().strip()
        if not text:
            return
        self.clear()
        self.submitted.emit(text)
