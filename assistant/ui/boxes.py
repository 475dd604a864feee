"""Box layouts with their margins and spacing set in one call (the window's many panels
each set both), and the frameless page that scrolls only up and down."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QBoxLayout, QFrame, QHBoxLayout, QScrollArea, QVBoxLayout, QWidget

Margins = tuple[int, int, int, int]
L = TypeVar("L", bound=QBoxLayout)


def hbox(parent: QWidget, margins: Margins, spacing: int | None = None) -> QHBoxLayout:
    """A row laid out on ``parent``."""
    return _spaced(QHBoxLayout(parent), margins, spacing)


def vbox(parent: QWidget, margins: Margins, spacing: int | None = None) -> QVBoxLayout:
    """A column laid out on ``parent``."""
    return _spaced(QVBoxLayout(parent), margins, spacing)


def vertical_scroller(area: QScrollArea) -> QScrollArea:
    """``area`` without a frame, its content as wide as the area, scrolling only up and down."""
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return area


def _spaced(layout: L, margins: Margins, spacing: int | None) -> L:
    layout.setContentsMargins(*margins)
    if spacing is not None:
        layout.setSpacing(spacing)
    return layout
