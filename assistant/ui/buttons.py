"""Buttons built in one call: the chat entries' small action buttons and the push buttons
of the window's panels and dialogs."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtWidgets import QPushButton, QToolButton


def action_button(text: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setObjectName("MessageAction")
    button.setText(text)
    button.setToolTip(tip)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    return button


def push_button(
    text: str,
    slot: Callable[[], object] | SignalInstance | None = None,
    *,
    name: str = "",
    tip: str = "",
    accessible: str = "",
) -> QPushButton:
    """A push button styled by its object ``name``, with its tooltip and accessible name,
    that runs ``slot`` when clicked."""
    button = QPushButton(text)
    if name:
        button.setObjectName(name)
    if tip:
        button.setToolTip(tip)
    if accessible:
        button.setAccessibleName(accessible)
    if slot is not None:
        button.clicked.connect(slot)
    return button
