"""The strips above the input while the model reads a prompt, and the busy spinner.

:class:`PromptProgress`: the model reads a long prompt (on a laptop CPU a few thousand
tokens take minutes): tokens done (cached ones count as done), speed and time left. It
appears only when the evaluation still runs after a moment, so a short prompt never flashes
it.

:class:`CompactionStrip`: a compaction runs inside the user's turn: reading the summary's
prompt (tokens, speed, time left, counted down between the per-batch reports), then writing
it (the seconds so far, ticking, so a long wait never looks stuck). Why reading ends at the
last token but one, and why the strip lays the window out at once: docs/ARCHITECTURE.md,
"The window".
"""

from __future__ import annotations

import time
from dataclasses import replace

from PySide6.QtCore import QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QFrame, QWidget

from assistant.service.events import PrefillProgress
from assistant.service.progress import eta_text
from assistant.ui.parts import hbox, new_label, progress_bar
from assistant.ui.theme import current_colors

#: How long an evaluation must run before the strip appears.
SHOW_AFTER_MS = 400
#: The prompt strip moves on at least this often between the model's reports.
TICK_MS = 1000


def progress_text(event: PrefillProgress, *, estimated: bool = False) -> str:
    """The strip's words; ``estimated``: the count is reckoned from the speed since the
    model's last report."""
    about = "about " if estimated else ""
    text = f"Reading your prompt: {about}{event.done:,} of {event.total:,} tokens"
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
        self.bar = progress_bar("Prompt evaluation progress", 160, 320, maximum=1000)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.bar)
        self.last: PrefillProgress | None = None
        #: When ``last`` was reported (the strip counts on from there at its speed).
        self._last_at = 0.0
        self._step = 0
        self._timer = QTimer(self, singleShot=True, interval=SHOW_AFTER_MS)
        self._timer.timeout.connect(self._reveal)
        self._tick = QTimer(self, interval=TICK_MS)
        self._tick.timeout.connect(self._count_on)
        self.setVisible(False)

    def update_progress(self, event: PrefillProgress) -> None:
        """A report from the model (once per batch of tokens read)."""
        previous = self.last
        #: Tokens per report (a batch): the count never runs further ahead than one.
        self._step = event.done - previous.done if previous is not None and \
            previous.done < event.done else 0
        self.last = event
        self._last_at = time.monotonic()
        self._show(event)
        if event.done < event.total and not self._tick.isActive():
            self._tick.start()

    def _count_on(self) -> None:
        """Between two reports (a batch can take many seconds on a busy laptop), the count
        and the time left move on at the known speed, never reaching the end."""
        last = self.last
        if last is None or not last.tokens_per_s or last.done >= last.total:
            return
        ran = time.monotonic() - self._last_at
        ahead = last.total - 1 if not self._step else min(last.total - 1, last.done + self._step)
        done = min(ahead, last.done + int(last.tokens_per_s * ran))
        self._show(replace(last, done=max(done, last.done),
                           eta_s=(last.total - done) / last.tokens_per_s), estimated=True)

    def _show(self, event: PrefillProgress, *, estimated: bool = False) -> None:
        fraction = event.done / event.total if event.total else 1.0
        self.bar.setValue(round(fraction * 1000))
        self.label.setText(progress_text(event, estimated=estimated))
        self.setAccessibleDescription(self.label.text())
        if event.done >= event.total:
            return  # the reply starts next; the status change hides the strip
        if not self.isVisible() and not self._timer.isActive():
            self._timer.start()

    def finish(self) -> None:
        self._timer.stop()
        self._tick.stop()
        self._step = 0
        self.last = None
        self.setVisible(False)

    def _reveal(self) -> None:
        if self.last is not None and self.last.done < self.last.total:
            self.setVisible(True)


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
        self.bar = progress_bar("Summary progress", 120, 240)
        layout.addWidget(self.spinner)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.bar)
        self.setToolTip(TOOLTIP)
        self.last: PrefillProgress | None = None
        self._last_at = 0.0
        self._started = 0.0
        self._writing_since: float | None = None
        self._tick = QTimer(self, interval=1000)
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


class Spinner(QWidget):
    """A small busy spinner: a rotating arc painted in the accent colour."""

    def __init__(self, parent: QWidget | None = None, size: int = 16) -> None:
        super().__init__(parent)
        self._size = size
        self._angle = 0
        self._timer = QTimer(self, interval=60)
        self._timer.timeout.connect(self._step)
        self.setFixedSize(size, size)

    def sizeHint(self) -> QSize:
        return QSize(self._size, self._size)

    @property
    def spinning(self) -> bool:
        return self._timer.isActive()

    def start(self) -> None:
        self._timer.start()
        self.show()

    def stop(self) -> None:
        self._timer.stop()

    def _step(self) -> None:
        self._angle = (self._angle + 30) % 360
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pen = QPen(QColor(current_colors().accent), 2.2)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        painter.setPen(pen)
        rect = QRectF(2, 2, self._size - 4, self._size - 4)
        painter.drawArc(rect, -self._angle * 16, 270 * 16)
        painter.end()
