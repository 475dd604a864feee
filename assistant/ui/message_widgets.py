"""Widgets for one entry of the chat: a message, a tool card, a notice.

* :class:`MessageWidget`: a user or assistant message (Markdown body, actions: copy, edit,
  regenerate, and the branch switcher ``< 1/2 >``).
* :class:`ToolCard`: a collapsible card for one tool call with its arguments and result;
  a pruned result says so and can still show the original.
* :class:`NoticeWidget`: info, warning and error notices, each styled distinctly.
* :class:`PruneNotice` and :class:`CompactionNotice`: what context management did.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import ClassVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from assistant.conversation import CompactionRecord, Message, ToolCall
from assistant.ui.markdown_view import MarkdownView
from assistant.ui.theme import monospace_font

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System", "tool": "Tool"}


def _repolish(widget: QWidget) -> None:
    """Re-apply the stylesheet after a dynamic property changed."""
    style = widget.style()
    style.unpolish(widget)
    style.polish(widget)


def _action_button(text: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setObjectName("MessageAction")
    button.setText(text)
    button.setToolTip(tip)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    return button


class BranchSwitcher(QWidget):
    """``< 1/2 >``: which version of a message is shown; emits -1 or +1."""

    stepped = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.prev_button = QToolButton()
        self.prev_button.setObjectName("BranchButton")
        self.prev_button.setText("<")
        self.prev_button.setToolTip("Previous version")
        self.next_button = QToolButton()
        self.next_button.setObjectName("BranchButton")
        self.next_button.setText(">")
        self.next_button.setToolTip("Next version")
        self.label = QLabel("1/1")
        self.label.setObjectName("BranchLabel")
        layout.addWidget(self.prev_button)
        layout.addWidget(self.label)
        layout.addWidget(self.next_button)
        self.prev_button.clicked.connect(lambda: self.stepped.emit(-1))
        self.next_button.clicked.connect(lambda: self.stepped.emit(1))
        self.set_position(0, 1)

    def set_position(self, index: int, count: int) -> None:
        """Show version ``index`` (0-based) of ``count``; hidden when there is one."""
        self.label.setText(f"{index + 1}/{count}")
        self.prev_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < count - 1)
        self.setVisible(count > 1)


class MessageWidget(QFrame):
    """One user or assistant message."""

    edit_requested = Signal(str)
    regenerate_requested = Signal(str)
    branch_step_requested = Signal(str, int)

    def __init__(
        self, message: Message, *, actions: bool = True, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.message = message
        self.setObjectName("Bubble")
        self.setProperty("role", message.role)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 8, 14, 8)
        layout.setSpacing(4)

        self.header_row = QWidget()
        header = QHBoxLayout(self.header_row)
        header.setContentsMargins(0, 0, 0, 0)
        header.setSpacing(6)
        self.role_label = QLabel(ROLE_TITLES.get(message.role, message.role))
        self.role_label.setObjectName("RoleLabel")
        header.addWidget(self.role_label)
        self.state_label = QLabel("")
        self.state_label.setObjectName("MutedLabel")
        header.addWidget(self.state_label)
        header.addStretch(1)
        self.branch_switcher = BranchSwitcher()
        self.branch_switcher.stepped.connect(
            lambda step: self.branch_step_requested.emit(self.message.id, step)
        )
        header.addWidget(self.branch_switcher)
        self.copy_button = _action_button("Copy", "Copy this message as Markdown")
        self.copy_button.clicked.connect(self.copy)
        self.edit_button = _action_button("Edit", "Edit this message (starts a new branch)")
        self.edit_button.clicked.connect(lambda: self.edit_requested.emit(self.message.id))
        self.regenerate_button = _action_button("Regenerate", "Write this reply again")
        self.regenerate_button.clicked.connect(
            lambda: self.regenerate_requested.emit(self.message.id)
        )
        for button in (self.copy_button, self.edit_button, self.regenerate_button):
            header.addWidget(button)
        self.edit_button.setVisible(actions and message.role == "user")
        self.regenerate_button.setVisible(actions and message.role == "assistant")
        self.copy_button.setVisible(actions)
        if not actions:
            self.branch_switcher.setVisible(False)
        self._actions = actions
        layout.addWidget(self.header_row)
        if message.initiated_by == "user" and message.role == "assistant":
            # A tool the user ran (/read, !cmd): just its card, no "Assistant" header.
            self.header_row.setVisible(False)
            self.setProperty("role", "tool-only")
            layout.setContentsMargins(0, 0, 0, 0)

        self.body = MarkdownView(message.content)
        layout.addWidget(self.body)
        self.body.setVisible(bool(message.content.strip()))
        self.cards_layout = QVBoxLayout()
        self.cards_layout.setSpacing(6)
        layout.addLayout(self.cards_layout)
        self.cards: dict[str, ToolCard] = {}
        for call in message.tool_calls:
            self.add_tool_call(call)
        self._update_state()

    # -- content ---------------------------------------------------------------------------
    def set_streaming_text(self, text: str) -> None:
        """Show text that is still being written (the final message replaces it)."""
        self.body.setVisible(bool(text.strip()))
        self.body.set_markdown(text)
        self.state_label.setText("writing…")

    def set_message(self, message: Message) -> None:
        self.message = message
        self.body.set_markdown(message.content)
        self.body.setVisible(bool(message.content.strip()))
        for call in message.tool_calls:
            if call.id not in self.cards:
                self.add_tool_call(call)
        self._update_state()

    def add_tool_call(self, call: ToolCall) -> ToolCard:
        card = ToolCard(call)
        self.cards[call.id] = card
        self.cards_layout.addWidget(card)
        return card

    def set_branch_info(self, index: int, count: int) -> None:
        if self._actions:
            self.branch_switcher.set_position(index, count)

    def set_actions_enabled(self, enabled: bool) -> None:
        for button in (self.edit_button, self.regenerate_button):
            button.setEnabled(enabled)
        self.branch_switcher.setEnabled(enabled)

    def _update_state(self) -> None:
        self.state_label.setText("stopped" if self.message.stopped else "")

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.message.content)


def _pretty_arguments(call: ToolCall) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False, indent=2)


def _short_arguments(call: ToolCall, limit: int = 70) -> str:
    if call.raw_arguments is not None:
        text = call.raw_arguments
    else:
        text = ", ".join(
            f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items()
        )
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _MonoBox(QPlainTextEdit):
    """Read-only monospace text that grows with its content up to ``max_lines``."""

    def __init__(self, text: str, max_lines: int = 14) -> None:
        super().__init__()
        self.setObjectName("CardMono")
        self.setReadOnly(True)
        self.setFont(monospace_font())
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self._max_lines = max_lines
        self.set_text(text)

    def set_text(self, text: str) -> None:
        self.setPlainText(text)
        total = max(1, text.count("\n") + 1)
        lines = min(self._max_lines, total)
        self.setVerticalScrollBarPolicy(
            Qt.ScrollBarPolicy.ScrollBarAsNeeded
            if total > self._max_lines
            else Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        )
        metrics = self.fontMetrics()
        margin = int(self.document().documentMargin() * 2)
        self.setFixedHeight(lines * metrics.lineSpacing() + margin + 16)


class ToolCard(QFrame):
    """A tool call: collapsed to one line; expands to arguments and result."""

    def __init__(self, call: ToolCall, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.call = call
        self.result: Message | None = None
        self.setObjectName("ToolCard")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 6)
        layout.setSpacing(4)
        self.header = QPushButton()
        self.header.setObjectName("CardHeader")
        self.header.setCheckable(True)
        self.header.setCursor(Qt.CursorShape.PointingHandCursor)
        self.header.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.header.toggled.connect(self.set_expanded)
        layout.addWidget(self.header)

        self.details = QWidget()
        details = QVBoxLayout(self.details)
        details.setContentsMargins(14, 0, 0, 0)
        details.setSpacing(4)
        args_title = QLabel("Arguments")
        args_title.setObjectName("MutedLabel")
        details.addWidget(args_title)
        self.arguments_box = _MonoBox(_pretty_arguments(call), max_lines=8)
        details.addWidget(self.arguments_box)
        self.result_title = QLabel("Result")
        self.result_title.setObjectName("MutedLabel")
        details.addWidget(self.result_title)
        self.pruned_row = QWidget()
        pruned = QHBoxLayout(self.pruned_row)
        pruned.setContentsMargins(0, 0, 0, 0)
        self.pruned_note = QLabel(
            "Cleared from the model's context to save room (pruned). The model now sees "
            "“[Old tool result content cleared]”."
        )
        self.pruned_note.setObjectName("PrunedNote")
        self.pruned_note.setWordWrap(True)
        self.show_original_button = _action_button("Show original", "Show the full output")
        self.show_original_button.setCheckable(True)
        self.show_original_button.toggled.connect(self._show_original)
        pruned.addWidget(self.pruned_note, 1)
        pruned.addWidget(self.show_original_button)
        details.addWidget(self.pruned_row)
        self.result_box = _MonoBox("(running…)")
        details.addWidget(self.result_box)
        layout.addWidget(self.details)
        self.details.setVisible(False)
        self.pruned_row.setVisible(False)
        self._refresh()

    @property
    def expanded(self) -> bool:
        return self.details.isVisible() or not self.details.isHidden()

    def set_expanded(self, expanded: bool) -> None:
        if self.header.isChecked() != expanded:
            self.header.setChecked(expanded)
            return
        self.details.setVisible(expanded)
        self._refresh()

    def set_result(self, message: Message) -> None:
        self.result = message
        self._refresh()

    def mark_pruned(self) -> None:
        if self.result is not None:
            self.result.pruned = True
        self._refresh()

    @property
    def is_pruned(self) -> bool:
        return self.result is not None and self.result.pruned

    def _show_original(self, shown: bool) -> None:
        self._refresh()

    def _refresh(self) -> None:
        arrow = "▾" if self.header.isChecked() else "▸"
        if self.result is None:
            status = "running…"
        elif self.result.is_error:
            status = "error"
        elif self.result.pruned:
            status = "output cleared"
        else:
            lines = self.result.content.count("\n") + 1 if self.result.content else 0
            status = f"{lines} line{'s' if lines != 1 else ''}"
        who = " (you)" if self.result is not None and self.result.initiated_by == "user" else ""
        self.header.setText(
            f"{arrow}  {self.call.name}{who}   {_short_arguments(self.call)}   — {status}"
        )
        self.header.setToolTip(f"{self.call.name}({_short_arguments(self.call, 400)})")
        if self.result is None:
            self.result_box.set_text("(running…)")
            return
        pruned = self.result.pruned
        self.pruned_row.setVisible(pruned)
        show = not pruned or self.show_original_button.isChecked()
        self.result_box.setVisible(show)
        self.show_original_button.setText("Hide original" if show and pruned else "Show original")
        if show:
            self.result_box.set_text(self.result.content or "(no output)")
        self.result_title.setText("Result (error)" if self.result.is_error else "Result")


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
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.label, 1)

    @property
    def text(self) -> str:
        return self.label.text()


def prune_text(count: int, tokens: int) -> str:
    noun = "tool output" if count == 1 else "tool outputs"
    return f"Cleared {count:,} old {noun}, {tokens:,} tokens"


class PruneNotice(QLabel):
    """A small centred line: "Cleared 3 old tool outputs, 1,240 tokens"."""

    def __init__(self, count: int, tokens: int, parent: QWidget | None = None) -> None:
        super().__init__(f"— {prune_text(count, tokens)} —", parent)
        self.setObjectName("PruneNotice")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setToolTip(
            "Old tool outputs were replaced by a placeholder in what the model sees. The "
            "originals stay in the chat (expand the tool card)."
        )


def compaction_title(record: CompactionRecord) -> str:
    return f"Compacted from {record.tokens_before:,} to {record.tokens_after:,} tokens"


def summarizer_line(record: CompactionRecord) -> str:
    """Which summarizer wrote the summary and why, e.g. "Summary written by the model
    under the summary grammar." (records saved before notes existed get a short line)."""
    note = record.summarizer_note
    if not note:
        note = {
            "model": "written by the model",
            "hook": "written by a before_compact hook",
        }.get(record.summarizer, f"by the {record.summarizer} fallback")
        if record.rejected:
            note += f": the model's summaries were rejected ({record.rejected[-1]})"
    return f"Summary {note}."


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
        self.originals_button = _action_button("Show original messages", "")
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
        return compaction_title(self.record)

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
