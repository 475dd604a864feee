"""The strip above the input while a compaction runs inside the user's turn: reading the
summary's prompt (tokens, speed, time left, counted down between the per-batch reports),
then writing it (the seconds so far, ticking, so a long wait never looks stuck). Why
reading ends at the last token but one, and why the strip lays the window out at once:
docs/ARCHITECTURE.md, "The window".
"""

from __future__ import annotations

import time
from dataclasses import replace

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFrame, QProgressBar, QWidget

from assistant.service.events import PrefillProgress
from assistant.service.progress import eta_text
from assistant.ui.parts import hbox, new_label
from assistant.ui.spinner import Spinner

TITLE = "Summarizing older messages to make room"
TOOLTIP = (
    "The chat is larger than the model's window: the model is writing a summary of the "
    "older messages, and will then answer your message with the summary and the recent "
    "messages. Every message stays in the chat and on screen. Esc (or Stop) cancels; "
    "Settings → Context can write the summary ahead of time, while you read."
)


def reading_over(event: PrefillProgress) -> bool:
    """The summary's prompt is read (all but the last token, which is read with the first
    word written)."""
    return event.done >= event.total - 1


def elapsed_text(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def compaction_text(
    event: PrefillProgress | None,
    writing_for: float | None = None,
    waited: float | None = None,
) -> str:
    """The strip's words: reading (tokens, speed, time left, or the time so far until the
    speed is known) or writing (its time so far)."""
    if event is None:
        return f"{TITLE}…"
    if reading_over(event):
        text = f"{TITLE}: writing the summary…"
        if writing_for is not None and writing_for >= 1:
            text += f" {elapsed_text(writing_for)} so far"
        return text
    text = f"{TITLE}: reading {event.done:,} of {event.total:,} tokens"
    if event.eta_s is not None and event.tokens_per_s is not None:
        text += f" · {event.tokens_per_s:,.0f} tokens/s · {eta_text(event.eta_s)}"
    elif waited is not None and waited >= 1:
        text += f" · estimating the time left… {elapsed_text(waited)} so far"
    return text


class CompactionStrip(QFrame):
    """Spinner, words and a bar; :meth:`start` when the compaction begins, :meth:`update`
    with each progress event, :meth:`stop` when it ends."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("StatusStrip")
        layout = hbox(self, (16, 6, 16, 6))
        self.spinner = Spinner()
        self.label = new_label(compaction_text(None), wrap=True)
        self.bar = QProgressBar()
        self.bar.setAccessibleName("Summary progress")
        self.bar.setTextVisible(False)
        self.bar.setMinimumWidth(120)
        self.bar.setMaximumWidth(240)
        layout.addWidget(self.spinner)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.bar)
        self.setToolTip(TOOLTIP)
        self.last: PrefillProgress | None = None
        self._last_at = 0.0
        self._started = 0.0
        self._writing_since: float | None = None
        self._tick = QTimer(self)
        self._tick.setInterval(1000)
        self._tick.timeout.connect(self._refresh)
        self.setVisible(False)

    def start(self) -> None:
        self.last, self._writing_since = None, None
        self._started = time.monotonic()
        self.bar.setRange(0, 0)  # busy until the first count arrives
        self._refresh()
        self.setVisible(True)
        self._settle()
        self.spinner.start()
        self._tick.start()

    def update_progress(self, event: PrefillProgress) -> None:
        if reading_over(event):
            if self._writing_since is None:
                self._writing_since = time.monotonic()
            self.bar.setRange(0, 0)
        else:  # reading (again: a second call of the summarizer reads its prompt anew)
            self._writing_since = None
            self.bar.setRange(0, 1000)
            self.bar.setValue(round(event.done / event.total * 1000) if event.total else 0)
        self.last, self._last_at = event, time.monotonic()
        self._refresh()

    def stop(self) -> None:
        self._tick.stop()
        self.spinner.stop()
        self.setVisible(False)
        self.last, self._writing_since = None, None

    @property
    def text(self) -> str:
        return self.label.text()

    def _refresh(self) -> None:
        now = time.monotonic()
        writing = now - self._writing_since if self._writing_since is not None else None
        shown = self.last
        if shown is not None and shown.eta_s is not None and writing is None:
            shown = replace(shown, eta_s=max(0.0, shown.eta_s - (now - self._last_at)))
        text = compaction_text(shown, writing, now - self._started)
        if text == self.label.text():
            return
        self.label.setText(text)
        self.setAccessibleDescription(text)
        if self.label.heightForWidth(self.label.width()) != self.label.height():
            self._settle()

    def _settle(self) -> None:
        """Lay out the strip and the widgets around it now, for the label's new height: from
        the strip up, each layout redone asks its parent for the size the next one gives."""
        if not self.isVisible():
            return
        widget: QWidget | None = self
        while widget is not None:
            layout = widget.layout()
            if layout is not None:
                layout.activate()
            widget = None if widget.isWindow() else widget.parentWidget()
