"""The readable column: on a wide window the messages and the input keep a comfortable line
length (about :data:`READABLE_CHARS` characters of the body font, room for a code line of
:data:`CODE_CHARS`, scaled with the zoom as the fonts are), centred, instead of running the
window's full width."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLayout, QWidget

from assistant.ui.theme import mono_font

#: The width aimed at for a line of message text, in characters of the body font (80 to
#: 100 read comfortably), and the most it may get.
READABLE_CHARS = 90
MAX_CHARS = 100
#: Monospace characters a line of code shows without scrolling, as far as :data:`MAX_CHARS`
#: allows, and the room beside them in a message (the code block's padding and margins).
CODE_CHARS = 80
CODE_PADDING = 20
#: A prose sample whose mean advance per character stands for the body font's.
_SAMPLE = "The quick brown fox jumps over the lazy dog, then reads a long paragraph. "
#: Room beside the text inside a message (the bubble's padding).
BUBBLE_PADDING = 28

LayoutT = TypeVar("LayoutT", bound=QLayout)


def char_width(widget: QWidget) -> float:
    """The mean advance of a character of ``widget``'s font (the body font, zoomed)."""
    return widget.fontMetrics().horizontalAdvance(_SAMPLE) / len(_SAMPLE)


def readable_width(widget: QWidget) -> int:
    """The widest a line of text gets: :data:`READABLE_CHARS` characters of ``widget``'s
    font, or enough for :data:`CODE_CHARS` of code when that is wider, at most
    :data:`MAX_CHARS` (all at the zoom in force)."""
    prose = char_width(widget)
    code = QFontMetrics(mono_font()).horizontalAdvance("0" * CODE_CHARS) + CODE_PADDING
    return int(min(max(prose * READABLE_CHARS, code), prose * MAX_CHARS))


class ReadableColumn(QObject):
    """Keeps a layout's content at most :func:`readable_width` plus ``extra`` wide and
    centred, by growing its side margins on a wide window; on a narrower one the margins it
    was made with stay (the reflow down to 640 px is unchanged)."""

    def __init__(self, layout: QLayout, extra: int = BUBBLE_PADDING) -> None:
        host = layout.parentWidget()
        if host is None:
            raise ValueError("the layout must be set on a widget")
        super().__init__(host)
        self._layout, self._host, self._extra = layout, host, extra
        self._side = layout.contentsMargins().left()
        host.installEventFilter(self)
        self.fit()

    @property
    def width(self) -> int:
        """The column's widest, margins aside."""
        return readable_width(self._host) + self._extra

    def fit(self) -> None:
        """Side margins for the host's width and font now."""
        side = max(self._side, (self._host.width() - self.width + 1) // 2)
        margins = self._layout.contentsMargins()
        if side != margins.left():
            self._layout.setContentsMargins(side, margins.top(), side, margins.bottom())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.Resize, QEvent.Type.FontChange):
            self.fit()
        return False
