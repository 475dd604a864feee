"""Notices in the chat: :class:`NoticeWidget` (info, warning, error, each styled
distinctly), and what context management did: :class:`PruneNotice` (a centred line) and
:class:`CompactionNotice` (a divider where a compaction cut the chat; expands to the
summary the model receives); and the banners over the chat (:class:`Banner`)."""

from __future__ import annotations

import html
import time
from typing import ClassVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from assistant.conversation import CompactionRecord
from assistant.service.status import summarizer_line
from assistant.service.values import DEFERRED_NOTE, ChatHandle, compaction_note, prune_note
from assistant.ui.parts import action_button, hbox, new_label, push_button, styled_button, vbox
from assistant.ui.theme import mono_font
from assistant.ui.wrap_button import WrapButton


class NoticeWidget(QFrame):
    """A one-paragraph notice; ``level`` is info, warning or error. A table (``/help``'s
    rows, laid out in ``text`` with spaces) is shown in a fixed-width font, which keeps
    its columns lined up."""

    PREFIX: ClassVar[dict[str, str]] = {"info": "ℹ", "warning": "⚠", "error": "✖"}

    def __init__(
        self, level: str, text: str, parent: QWidget | None = None, *, table: bool = False
    ) -> None:
        super().__init__(parent)
        self.level = level
        self.setObjectName("Notice")
        self.setProperty("level", level)
        layout = hbox(self, (12, 8, 12, 8))
        icon = QLabel(self.PREFIX.get(level, "ℹ"))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        layout.addWidget(icon)
        self.label = new_label(text, wrap=True, selectable=True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        if table:
            self.label.setFont(mono_font())
        layout.addWidget(self.label, 1)

    @property
    def text(self) -> str:
        return self.label.text()


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
