"""The strip above the input while the model reads a long prompt (on a laptop CPU a few
thousand tokens take minutes): tokens done (cached ones count as done), speed and time left.
It appears only when the evaluation still runs after a moment, so a short prompt never
flashes it.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFrame, QProgressBar, QWidget

from assistant.service.events import PrefillProgress
from assistant.service.progress import eta_text
from assistant.ui.parts import hbox, new_label

#: How long an evaluation must run before the strip appears.
SHOW_AFTER_MS = 400


def progress_text(event: PrefillProgress) -> str:
    text = f"Reading your prompt: {event.done:,} of {event.total:,} tokens"
    if event.eta_s is not None and event.tokens_per_s is not None:
        text += f" · {event.tokens_per_s:,.0f} tokens/s · {eta_text(event.eta_s)}"
    else:
        text += " · estimating the time left…"
    return text + " · Esc to stop"


class PromptProgress(QFrame):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("PromptProgress")
        layout = hbox(self, (16, 6, 16, 6), 12)
        self.label = new_label("", "PromptProgressLabel")
        self.bar = QProgressBar()
        self.bar.setAccessibleName("Prompt evaluation progress")
        self.bar.setTextVisible(False)
        self.bar.setRange(0, 1000)
        self.bar.setMinimumWidth(160)
        self.bar.setMaximumWidth(320)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.bar)
        self.last: PrefillProgress | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SHOW_AFTER_MS)
        self._timer.timeout.connect(self._reveal)
        self.setVisible(False)

    def update_progress(self, event: PrefillProgress) -> None:
        self.last = event
        fraction = event.done / event.total if event.total else 1.0
        self.bar.setValue(round(fraction * 1000))
        self.label.setText(progress_text(event))
        self.setAccessibleDescription(self.label.text())
        if event.done >= event.total:
            return  # the reply starts next; the status change hides the strip
        if not self.isVisible() and not self._timer.isActive():
            self._timer.start()

    def finish(self) -> None:
        self._timer.stop()
        self.last = None
        self.setVisible(False)

    def _reveal(self) -> None:
        if self.last is not None and self.last.done < self.last.total:
            self.setVisible(True)
