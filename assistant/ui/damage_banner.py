"""The banner over a chat with damaged lines, which opens read-only (see
:mod:`assistant.sessions.reader`): what is wrong, and "Repair", which writes a repaired copy
beside the original and opens it (``ChatService.repair_chat``).
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QWidget

from assistant.sessions.handle import ChatHandle
from assistant.ui.parts import hbox, new_label, push_button


class DamageBanner(QFrame):
    """Shown while the open chat is read-only because of damaged lines."""

    repair_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Notice")
        self.setProperty("level", "warning")
        layout = hbox(self, (16, 8, 12, 8))
        self.label = new_label("", wrap=True, selectable=True)
        self.repair_button = push_button(
            "Repair (keeps the original)", self.repair_requested,
            tip="Write a copy of this chat without the damaged lines and open it; the original "
            "file is not changed.",
        )
        layout.addWidget(self.label, 1)
        layout.addWidget(self.repair_button, 0, Qt.AlignmentFlag.AlignTop)
        self.setVisible(False)
        self.read_only = False

    def show_for(self, handle: ChatHandle | None) -> None:
        self.read_only = handle is not None and handle.read_only is not None
        if handle is not None and self.read_only:
            details = [w for w in handle.warnings if w and w != handle.read_only]
            self.label.setText(
                "<b>Read-only: some lines of this chat are damaged.</b> "
                + " ".join(html.escape(d, quote=False) for d in details)
                + " Everything that could be read is shown."
            )
        self.setVisible(self.read_only)
