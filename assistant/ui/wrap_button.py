"""Buttons and labels that fit a narrow or zoomed window instead of being cut off: a push
button whose text wraps onto more lines (the header of a tool card or of a compaction
divider), and a label and a button that show as much of their text as fits, the whole in
the tooltip (the status bar)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QPushButton, QSizePolicy, QWidget

from assistant.ui.parts import hbox

#: The narrowest a wrapping button gets (its text wraps below that).
MIN_WIDTH = 80


class WrapButton(QPushButton):
    """A checkable-or-not push button showing its text in a wrapping label; :meth:`text`
    and :meth:`setText` are the label's (the accessible name follows the text)."""

    def __init__(self, text: str = "", parent: QWidget | None = None,
                 margins: tuple[int, int, int, int] = (4, 4, 4, 4)) -> None:
        super().__init__(parent)
        self.label = QLabel(text, self, textFormat=Qt.TextFormat.PlainText)
        self.label.setObjectName("WrapButtonText")
        self.label.setWordWrap(True)
        self.label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self._box = hbox(self, margins)
        self._box.addWidget(self.label)
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def text(self) -> str:
        return self.label.text()

    def setText(self, text: str) -> None:
        self.label.setText(text)
        self.setAccessibleName(text)
        self.updateGeometry()

    def _extra(self) -> QSize:
        m = self.contentsMargins() + self._box.contentsMargins()
        return QSize(m.left() + m.right(), m.top() + m.bottom())

    def sizeHint(self) -> QSize:
        """The text on one line (a wrapping label's own hint may be two lines high)."""
        metrics = self.label.fontMetrics()
        lines = self.label.text().split("\n")
        text = QSize(max(metrics.horizontalAdvance(line) for line in lines) + 2,
                     metrics.lineSpacing() * len(lines))
        return text + self._extra()

    def minimumSizeHint(self) -> QSize:
        """Narrow, one line high (the layout asks :meth:`heightForWidth` for the rest: a
        minimum as tall as the narrowest wrap would leave a gap under a wide window)."""
        hint = self.sizeHint()
        return QSize(min(hint.width(), MIN_WIDTH), hint.height())

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        extra = self._extra()
        return self.label.heightForWidth(max(1, width - extra.width())) + extra.height()


class FittedLabel(QLabel):
    """A one-line label that shows as much of its text as fits (``…`` at the end) and the
    whole in its tooltip; :meth:`text` is the whole text (the status bar in a narrow
    window)."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent, textFormat=Qt.TextFormat.PlainText)
        self._full = ""
        self.setText(text)

    def text(self) -> str:
        return self._full

    def setText(self, text: str) -> None:
        self._full = text
        self.setToolTip(text)
        self._fit()
        self.updateGeometry()

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        metrics = self.fontMetrics()
        extra = metrics.horizontalAdvance(self._full) - metrics.horizontalAdvance(
            super().text())
        return QSize(hint.width() + extra, hint.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(min(self.sizeHint().width(), 40), super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        width = max(0, self.contentsRect().width())
        shown = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, width)
        QLabel.setText(self, shown if self.width() < self.sizeHint().width() else self._full)


class FittedButton(QPushButton):
    """A push button that shows as much of its text as fits (``…`` at the end), the whole
    in its tooltip; :meth:`text` is the whole text (the model's name in the status bar)."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setText(text)

    def text(self) -> str:
        return self._full

    def setText(self, text: str) -> None:
        self._full = text
        QPushButton.setText(self, text)
        self._hint = super().sizeHint()
        self._fit()
        self.updateGeometry()

    def sizeHint(self) -> QSize:
        return QSize(self._hint)

    def minimumSizeHint(self) -> QSize:
        return QSize(min(self._hint.width(), 48), self._hint.height())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            QPushButton.setText(self, self._full)
            self._hint = super().sizeHint()
            self._fit()
            self.updateGeometry()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        room = self.width() - (self._hint.width() - self.fontMetrics().horizontalAdvance(
            self._full))
        shown = self._full if self.width() >= self._hint.width() else \
            self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, max(0, room))
        QPushButton.setText(self, shown)
