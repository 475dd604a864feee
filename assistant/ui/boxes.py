"""Box layouts with their margins and spacing set in one call (the window's many panels
each set both)."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtWidgets import QBoxLayout, QHBoxLayout, QVBoxLayout, QWidget

Margins = tuple[int, int, int, int]
L = TypeVar("L", bound=QBoxLayout)


def hbox(parent: QWidget, margins: Margins, spacing: int | None = None) -> QHBoxLayout:
    """A row laid out on ``parent``."""
    return _spaced(QHBoxLayout(parent), margins, spacing)


def vbox(parent: QWidget, margins: Margins, spacing: int | None = None) -> QVBoxLayout:
    """A column laid out on ``parent``."""
    return _spaced(QVBoxLayout(parent), margins, spacing)


def _spaced(layout: L, margins: Margins, spacing: int | None) -> L:
    layout.setContentsMargins(*margins)
    if spacing is not None:
        layout.setSpacing(spacing)
    return layout
