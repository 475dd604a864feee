"""A row of widgets that wraps onto more lines when the row is too narrow: a message's
header (who wrote it, then its buttons) stays whole in a narrow or zoomed window."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QWidget


class FlowRow(QLayout):
    """Items side by side, wrapping onto the next line where they no longer fit. Items from
    :meth:`start_end_group` on are packed against the right edge of their line (the left
    ones against the left edge), as a stretch between them would."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._end_from: int | None = None
        self.setSpacing(spacing)
        self.setContentsMargins(0, 0, 0, 0)

    def start_end_group(self) -> None:
        """The items added from now on go to the right end of their line."""
        self._end_from = len(self._items)

    # -- QLayout -----------------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        if not 0 <= index < len(self._items):
            return None
        if self._end_from is not None and index < self._end_from:
            self._end_from -= 1
        return self._items.pop(index)

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._place(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._place(rect, apply=True)

    def sizeHint(self) -> QSize:
        shown = self._shown()
        width = sum(i.sizeHint().width() for i in shown) + self.spacing() * max(0, len(shown) - 1)
        height = max((i.sizeHint().height() for i in shown), default=0)
        return QSize(width, height)

    def minimumSize(self) -> QSize:
        shown = self._shown()
        width = max((i.minimumSize().width() for i in shown), default=0)
        height = max((i.minimumSize().height() for i in shown), default=0)
        return QSize(width, height)

    # -- placing -----------------------------------------------------------------------
    def _shown(self) -> list[QLayoutItem]:
        return [i for i in self._items if not i.isEmpty()]

    def _lines(self, width: int) -> list[list[QLayoutItem]]:
        lines: list[list[QLayoutItem]] = [[]]
        used = 0
        for item in self._shown():
            w = item.sizeHint().width()
            if lines[-1] and used + self.spacing() + w > width:
                lines.append([])
                used = 0
            used += w + (self.spacing() if lines[-1] else 0)
            lines[-1].append(item)
        return lines

    def _place(self, rect: QRect, *, apply: bool) -> int:
        """Lay the items out in ``rect`` (only measure without ``apply``); the height."""
        end_items = set(map(id, self._items[self._end_from:])) if self._end_from is not None \
            else set()
        y = rect.y()
        for line in self._lines(rect.width()):
            height = max((i.sizeHint().height() for i in line), default=0)
            if apply:
                self._place_line(line, end_items, rect, y, height)
            y += height + self.spacing()
        return max(0, y - rect.y() - self.spacing())

    def _place_line(self, line: list[QLayoutItem], end_items: set[int], rect: QRect, y: int,
                    height: int) -> None:
        x = rect.x()
        right = rect.x() + rect.width()
        tail = [i for i in line if id(i) in end_items]
        tail_width = sum(i.sizeHint().width() for i in tail) + self.spacing() * max(
            0, len(tail) - 1)
        for item in line:
            if tail and item is tail[0]:
                x = max(x, right - tail_width)
            size = item.sizeHint()
            width = min(size.width(), rect.width())
            item.setGeometry(QRect(QPoint(x, y + (height - size.height()) // 2),
                                   QSize(width, size.height())))
            x += width + self.spacing()
