"""Notices in the chat: :class:`NoticeWidget` (info, warning, error, each styled
distinctly), and what context management did: :class:`PruneNotice` (a centred line) and
:class:`CompactionNotice` (expands to the summary and the original messages)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import ClassVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from assistant.conversation import CompactionRecord, Message, ToolCall
from assistant.service.status import compaction_note, prune_note, summarizer_line
from assistant.ui.buttons import action_button
from assistant.ui.markdown_view import MarkdownView
from assistant.ui.message_widgets import MessageWidget
from assistant.ui.theme import monospace_font
from assistant.ui.tool_card import ToolCard

_COLUMN_LINE = re.compile(r"^ {2,}\S.*?\S {2,}\S")


def is_columns(text: str) -> bool:
    """Text laid out in columns with spaces (a command list), which a proportional font
    would misalign."""
    return sum(1 for line in text.splitlines() if _COLUMN_LINE.match(line)) >= 3


class NoticeWidget(QFrame):
    """A one-paragraph notice; ``level`` is info, warning or error."""

    PREFIX: ClassVar[dict[str, str]] = {"info": "ℹ", "warning": "⚠", "error": "✖"}

    def __init__(self, level: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.level = level
        self.setObjectName("Notice")
        self.setProperty("level", level)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        icon = QLabel(self.PREFIX.get(level, "ℹ"))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        layout.addWidget(icon)
        self.label = QLabel(text)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        if is_columns(text):  # /help and friends: keep the columns lined up
            self.label.setFont(monospace_font())
        layout.addWidget(self.label, 1)

    @property
    def text(self) -> str:
        return self.label.text()


class PruneNotice(QLabel):
    """A small centred line: "Cleared 3 old tool outputs, 1,240 tokens"."""

    def __init__(self, count: int, tokens: int, parent: QWidget | None = None) -> None:
        super().__init__(f"— {prune_note(count, tokens)} —", parent)
        self.setObjectName("PruneNotice")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setToolTip(
            "Old tool outputs were replaced by a placeholder in what the model sees. The "
            "originals stay in the chat (expand the tool card)."
        )


class CompactionNotice(QFrame):
    """Collapsed: "Compacted from 8,912 to 3,104 tokens"; expands to the summary and the
    original messages (fetched lazily through ``originals``)."""

    def __init__(
        self,
        record: CompactionRecord,
        originals: Callable[[], list[Message]],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.record = record
        self._originals = originals
        self.setObjectName("CompactionNotice")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 8)
        layout.setSpacing(4)
        self.header = QPushButton()
        self.header.setObjectName("CardHeader")
        self.header.setCheckable(True)
        self.header.setCursor(Qt.CursorShape.PointingHandCursor)
        self.header.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.header.toggled.connect(self._toggle)
        layout.addWidget(self.header)
        reason = {
            "threshold": "the context was full",
            "overflow": "the model overflowed",
            "manual": "you asked (/compact)",
        }[record.reason]
        when = time.strftime("%H:%M", time.localtime(record.timestamp))
        meta = f"Compaction {record.count} at {when}, because {reason}"
        if record.duration_s:
            meta += f"; took {record.duration_s:.1f} s"
        if record.focus:
            meta += f"; focus: {record.focus}"
        self.meta = QLabel(meta)
        self.meta.setObjectName("MutedLabel")
        self.meta.setWordWrap(True)
        layout.addWidget(self.meta)
        self.summarizer_label = QLabel(summarizer_line(record))
        self.summarizer_label.setObjectName("MutedLabel")
        self.summarizer_label.setWordWrap(True)
        layout.addWidget(self.summarizer_label)
        self.details = QWidget()
        details = QVBoxLayout(self.details)
        details.setContentsMargins(14, 0, 0, 0)
        details.setSpacing(6)
        summary_title = QLabel("Summary the model sees instead of the older messages")
        summary_title.setObjectName("RoleLabel")
        details.addWidget(summary_title)
        self.summary_view = MarkdownView(record.summary)
        details.addWidget(self.summary_view)
        self.originals_button = action_button("Show original messages", "")
        self.originals_button.setCheckable(True)
        self.originals_button.toggled.connect(self._toggle_originals)
        details.addWidget(self.originals_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.originals_box = QWidget()
        self.originals_layout = QVBoxLayout(self.originals_box)
        self.originals_layout.setContentsMargins(0, 0, 0, 0)
        self.originals_layout.setSpacing(6)
        self.originals_box.setVisible(False)
        details.addWidget(self.originals_box)
        layout.addWidget(self.details)
        self.details.setVisible(False)
        self._originals_built = False
        self._update_header()

    @property
    def title(self) -> str:
        return compaction_note(self.record)

    def set_expanded(self, expanded: bool) -> None:
        self.header.setChecked(expanded)

    def show_originals(self, shown: bool = True) -> None:
        self.set_expanded(True)
        self.originals_button.setChecked(shown)

    def original_widgets(self) -> list[QWidget]:
        return [
            w
            for i in range(self.originals_layout.count())
            if (item := self.originals_layout.itemAt(i)) is not None
            and (w := item.widget()) is not None
        ]

    def _toggle(self, expanded: bool) -> None:
        self.details.setVisible(expanded)
        self._update_header()

    def _update_header(self) -> None:
        arrow = "▾" if self.header.isChecked() else "▸"
        self.header.setText(f"{arrow}  {self.title}")

    def _toggle_originals(self, shown: bool) -> None:
        if shown and not self._originals_built:
            self._originals_built = True
            messages = self._originals()
            cards: dict[str, ToolCard] = {}
            for msg in messages:
                if msg.role == "tool" and msg.tool_call_id in cards:
                    cards[msg.tool_call_id or ""].set_result(msg)
                    continue
                if msg.role == "system":
                    continue
                if msg.role == "tool":
                    card = ToolCard(
                        ToolCall(id=msg.tool_call_id or "call", name=msg.name or "tool")
                    )
                    card.set_result(msg)
                    self.originals_layout.addWidget(card)
                    continue
                widget = MessageWidget(msg, actions=False)
                cards.update(widget.cards)
                self.originals_layout.addWidget(widget)
            self.originals_button.setText(f"Hide original messages ({len(messages)})")
        elif self._originals_built:
            count = len(self.original_widgets())
            self.originals_button.setText(
                f"{'Hide' if shown else 'Show'} original messages ({count})"
            )
        self.originals_box.setVisible(shown)
