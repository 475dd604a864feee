"""Small helpers shared by the chat's entry widgets (messages, tool cards, notices)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton


def action_button(text: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setObjectName("MessageAction")
    button.setText(text)
    button.setToolTip(tip)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    return button
