"""Notices in the chat: :class:`NoticeWidget` (info, warning, error, each styled
distinctly), and what context management did: :class:`PruneNotice` (a centred line) and
:class:`CompactionNotice` (a divider where a compaction cut the chat; expands to the
summary the model receives); and the banners over the chat (:class:`Banner`)."""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from typing import ClassVar

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from assistant.conversation import CompactionRecord
from assistant.service.status import summarizer_line
from assistant.service.values import (
    DEFERRED_NOTE,
    ChatHandle,
    HelpRow,
    compaction_note,
    prune_note,
)
from assistant.ui.parts import action_button, hbox, new_label, push_button, styled_button, vbox
from assistant.ui.theme import mono_font
from assistant.ui.wrap_button import WrapButton


class NoticeWidget(QFrame):
    """A one-paragraph notice; ``level`` is info, warning or error. A table (``/help``'s
    ``rows``, also laid out in ``text`` with spaces) is shown as a grid: the first column in
    a fixed-width font at its width, the second wrapping to the room that is left (a narrow
    column wraps the descriptions, never a row under the next command)."""

    PREFIX: ClassVar[dict[str, str]] = {"info": "ℹ", "warning": "⚠", "error": "✖"}

    def __init__(
        self, level: str, text: str, parent: QWidget | None = None, *,
        rows: Sequence[HelpRow] = (),
    ) -> None:
        super().__init__(parent)
        self.level = level
        self._text = text
        self.setObjectName("Notice")
        self.setProperty("level", level)
        self._outer = layout = hbox(self, (12, 8, 12, 8))
        self._icon = icon = QLabel(self.PREFIX.get(level, "ℹ"))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        layout.addWidget(icon)
        head, rest = _around_rows(text, rows)
        #: The table's cells, a (command, description) pair of labels per row.
        self.cells: list[tuple[QLabel, QLabel]] = []
        if not rows or head is None:
            self.label = _text_label(text)
            layout.addWidget(self.label, 1)
            return
        body = QVBoxLayout()
        body.setContentsMargins(0, 0, 0, 0)
        body.setSpacing(4)
        layout.addLayout(body, 1)
        self.label = _text_label(head)
        body.addWidget(self.label)
        grid = QGridLayout()
        grid.setContentsMargins(12, 0, 0, 0)
        grid.setHorizontalSpacing(16)
        grid.setVerticalSpacing(2)
        grid.setColumnStretch(1, 1)
        for i, row in enumerate(rows):
            usage = new_label(row.usage, wrap=True, selectable=True)
            usage.setFont(mono_font())
            what = _text_label(row.description)
            grid.addWidget(usage, i, 0, Qt.AlignmentFlag.AlignTop)
            grid.addWidget(what, i, 1, Qt.AlignmentFlag.AlignTop)
            self.cells.append((usage, what))
        body.addLayout(grid)
        self._grid = grid
        if rest:
            body.addWidget(_text_label(rest))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_columns()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_columns()

    def _fit_columns(self) -> None:
        """The commands' column as wide as its longest command, at most
        :data:`COMMAND_SHARE` of the table's room (the rest for the descriptions); a
        command wraps only where even that is too narrow (a 200 % zoom in a small window)."""
        if not self.cells:
            return
        usage = self.cells[0][0]
        full = max(u.fontMetrics().horizontalAdvance(u.text()) for u, _d in self.cells)
        full += 2 * usage.margin() + 2
        outer = self._outer
        m, g = outer.contentsMargins(), self._grid.contentsMargins()
        room = (self.width() - m.left() - m.right() - self._icon.sizeHint().width()
                - outer.spacing() - g.left() - self._grid.horizontalSpacing())
        width = max(0, min(full, int(room * COMMAND_SHARE)))
        if self._grid.columnMinimumWidth(0) != width:
            self._grid.setColumnMinimumWidth(0, width)

    @property
    def text(self) -> str:
        return self._text


#: The most of a table's width its commands' column takes.
COMMAND_SHARE = 0.6


def _text_label(text: str) -> QLabel:
    label = new_label(text, wrap=True, selectable=True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def _around_rows(text: str, rows: Sequence[HelpRow]) -> tuple[str | None, str]:
    """The lines of ``text`` before and after its table of ``rows`` (one line per row, in
    order, each starting with the row's usage); (None, "") when it holds no such table."""
    lines = text.split("\n")
    for start in range(len(lines) - len(rows) + 1):
        if rows and all(lines[start + i].strip().startswith(r.usage)
                        and lines[start + i].rstrip().endswith(r.description)
                        for i, r in enumerate(rows)):
            return "\n".join(lines[:start]), "\n".join(lines[start + len(rows):]).strip()
    return None, ""


class PruneNotice(QLabel):
    """A small centred line: "Cleared 3 old tool outputs, 1,240 tokens"."""

    def __init__(self, count: int, tokens: int, parent: QWidget | None = None) -> None:
        super().__init__(f"— {prune_note(count, tokens)} —", parent)
        self.setObjectName("PruneNotice")
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setToolTip(
            "Old tool outputs were replaced by a placeholder in what the model sees. The "
            "originals stay in the chat (expand the tool card)."
        )


#: Under the summary when recall's focus is on: the one kind of reply written without it.
FOCUS_NOTE = (
    "Except for a reply to a message that brings back passages from earlier in the chat: "
    "that reply is written from those passages, the newest messages and your message, "
    "without this summary."
)


class CompactionNotice(QFrame):
    """A divider where a compaction cut the chat (every message stays on screen above it);
    expanded, it shows the summary exactly as the model receives it, and when, why and by
    whom it was written. ``superseded``: a later compaction replaced this summary."""

    NOW = "The model now sees a summary of everything above"
    THEN = "The model saw a summary of everything above (a later compaction replaced it)"

    def __init__(
        self,
        record: CompactionRecord,
        *,
        superseded: bool = False,
        recall_focus: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.record = record
        self.superseded = superseded
        self.setObjectName("CompactionNotice")
        layout = vbox(self, (0, 4, 0, 4), 4)
        row = QHBoxLayout()
        row.setSpacing(8)
        row.addWidget(_rule(), 1)
        self.header = styled_button(
            WrapButton(margins=(10, 2, 10, 2)), "", name="DividerHeader",
            tip="Show the summary the model sees instead of the messages above",
        )
        self.header.setCheckable(True)
        self.header.setCursor(Qt.CursorShape.PointingHandCursor)
        self.header.toggled.connect(self._toggle)
        row.addWidget(self.header, 0)
        row.addWidget(_rule(), 1)
        layout.addLayout(row)
        self.plain = new_label(plain_compaction(record), "MutedLabel", wrap=True)
        self.plain.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(self.plain)
        self.details = QFrame()
        self.details.setObjectName("SummaryBox")
        details = vbox(self.details, (12, 8, 12, 10), 6)
        details.addWidget(new_label(
            "What the model receives instead of the messages above (word for word):",
            "RoleLabel", wrap=True,
        ))
        self.summary_view = new_label(record.summary, "SummaryText", wrap=True, selectable=True)
        self.summary_view.setTextFormat(Qt.TextFormat.PlainText)
        details.addWidget(self.summary_view)
        # The technical account, for whoever wants it (one click away: the header).
        self.meta = new_label(technical_compaction(record), "MutedLabel", wrap=True)
        details.addWidget(self.meta)
        self.summarizer_label = new_label(summarizer_line(record), "MutedLabel", wrap=True)
        details.addWidget(self.summarizer_label)
        # Recall's focus leaves the summary out of a call that brought excerpts back
        # (compaction.context_render.focus_history): the card says so, not "always".
        self.focus_note = new_label(FOCUS_NOTE, "MutedLabel", wrap=True)
        details.addWidget(self.focus_note)
        self.focus_note.setVisible(recall_focus)
        copy = action_button("Copy summary", "Copy the summary text",
                             lambda: QGuiApplication.clipboard().setText(record.summary))
        details.addWidget(copy, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.details)
        self.details.setVisible(False)
        self._update_header()

    def set_expanded(self, expanded: bool) -> None:
        self.header.setChecked(expanded)

    def _toggle(self, expanded: bool) -> None:
        self.details.setVisible(expanded)
        self._update_header()

    def _update_header(self) -> None:
        arrow = "▾" if self.header.isChecked() else "▸"
        self.header.setText(f"{arrow}  {self.THEN if self.superseded else self.NOW}")


class CompactionLine(QFrame):
    """Shown live under the message a compaction made room for: older messages were
    summarized and stay on screen; "Show where" scrolls to the divider and opens it."""

    def __init__(self, record: CompactionRecord, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.record = record
        self.setObjectName("CompactionLine")
        layout = vbox(self, (0, 0, 0, 0), 2)
        self.label = new_label(
            "Older messages were summarized to make room: the assistant now reads a short "
            "summary of them instead. They all stay in the chat for you."
            + (" This quick summary was made at once; the assistant writes a fuller one "
               "while you read." if record.summarizer_note == DEFERRED_NOTE else ""),
            "MutedLabel", wrap=True,
        )
        self.label.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(self.label)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.show_button = action_button(
            "Show where", "Scroll up to where the summary begins and open it")
        self.details_button = action_button("Details", "How much room it made, and how")
        self.details_button.setCheckable(True)
        buttons.addWidget(self.show_button)
        buttons.addWidget(self.details_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.details = new_label(
            technical_compaction(record) + "\n" + summarizer_line(record), "MutedLabel",
            wrap=True)
        self.details.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.details.setVisible(False)
        self.details_button.toggled.connect(self.details.setVisible)
        layout.addWidget(self.details)


#: Why a compaction ran, in plain words.
_PLAIN_REASON = {
    "threshold": "the chat had grown longer than the assistant can read at once",
    "overflow": "the latest message did not fit beside the rest",
    "manual": "you asked for it",
}


def plain_compaction(record: CompactionRecord) -> str:
    """The divider's line for anyone: when, why, and that nothing is lost."""
    when = time.strftime("%H:%M", time.localtime(record.timestamp))
    who = ("a quick summary made at once (the assistant writes a fuller one next)"
           if record.summarizer_note == DEFERRED_NOTE
           else "a summary written by the assistant" if record.summarizer == "model"
           else "a short summary made without the assistant")
    return (f"At {when} {_PLAIN_REASON[record.reason]}, so the messages above were replaced, "
            f"for the assistant only, by {who}. You still see them all.")


def technical_compaction(record: CompactionRecord) -> str:
    """The detail: compaction number, time, reason, tokens before and after, duration."""
    reason = {
        "threshold": "the context was full",
        "overflow": "the model overflowed",
        "manual": "you asked (/compact)",
    }[record.reason]
    when = time.strftime("%H:%M", time.localtime(record.timestamp))
    meta = f"Compaction {record.count} at {when}, because {reason}: {compaction_note(record)}"
    if record.duration_s:
        meta += f"; took {record.duration_s:.1f} s"
    if record.focus:
        meta += f"; focus: {record.focus}"
    return meta


def _rule() -> QFrame:
    line = QFrame()
    line.setObjectName("DividerRule")
    line.setFrameShape(QFrame.Shape.HLine)
    line.setFixedHeight(1)
    return line


class Banner(QFrame):
    """A strip over the chat, hidden until shown: a selectable message and its buttons
    (styled by its object ``name``, and by ``level`` as a notice)."""

    def __init__(self, name: str, *buttons: QPushButton, level: str = "",
                 align: Qt.AlignmentFlag | None = None) -> None:
        super().__init__()
        self.setObjectName(name)
        if level:
            self.setProperty("level", level)
        layout = hbox(self, (16, 8, 12, 8))
        self.label = new_label("", wrap=True, selectable=True)
        layout.addWidget(self.label, 1)
        for button in buttons:
            layout.addWidget(button, 0, align or Qt.AlignmentFlag(0))
        self.setVisible(False)


class DamageBanner(Banner):
    """Over a chat with damaged lines, which opens read-only (see
    :mod:`assistant.sessions.reader`): what is wrong, and "Repair", which writes a repaired
    copy beside the original and opens it (``ChatService.repair_chat``)."""

    repair_requested = Signal()

    def __init__(self) -> None:
        self.repair_button = push_button(
            "Repair (keeps the original)",
            tip="Write a copy of this chat without the damaged lines and open it; the original "
            "file is not changed.",
        )
        super().__init__("Notice", self.repair_button, level="warning",
                         align=Qt.AlignmentFlag.AlignTop)
        self.repair_button.clicked.connect(self.repair_requested)
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
