"""One user or assistant message of the chat: its Markdown body, its actions, the branch
switcher ``< 1/2 >`` and the cards of the tool calls it made.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from assistant.conversation import Message, ToolCall
from assistant.service.progress import stats_text
from assistant.ui.flow_layout import FlowRow
from assistant.ui.markdown_view import MarkdownView
from assistant.ui.parts import action_button, hbox, new_label, styled_button, vbox
from assistant.ui.tool_card import ToolCard

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System", "tool": "Tool"}


class BranchSwitcher(QWidget):
    """``< 1/2 >``: which version of a message is shown; emits -1 or +1."""

    stepped = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = hbox(self, (0, 0, 0, 0), 0)
        self.prev_button = styled_button(
            QToolButton(), "<", lambda: self.stepped.emit(-1), name="BranchButton",
            tip="Previous version", accessible="Show the previous version",
        )
        self.label = new_label("1/1", "BranchLabel")
        self.next_button = styled_button(
            QToolButton(), ">", lambda: self.stepped.emit(1), name="BranchButton",
            tip="Next version", accessible="Show the next version",
        )
        for widget in (self.prev_button, self.label, self.next_button):
            layout.addWidget(widget)
        self.set_position(0, 1)

    def set_position(self, index: int, count: int) -> None:
        """Show version ``index`` (0-based) of ``count``; hidden when there is one."""
        self.label.setText(f"{index + 1}/{count}")
        self.prev_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < count - 1)
        self.setVisible(count > 1)


class MessageWidget(QFrame):
    edit_requested = Signal(str)
    regenerate_requested = Signal(str)
    delete_requested = Signal(str)
    branch_step_requested = Signal(str, int)
    #: Answer this user message (the last one, left without a reply: stopped, failed).
    retry_requested = Signal(str)
    #: Write more of this reply (it stopped at the length limit).
    continue_requested = Signal(str)

    def __init__(self, message: Message, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message = message
        self.setObjectName("Bubble")
        self.setProperty("role", message.role)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        layout = vbox(self, (14, 8, 14, 8), 4)

        self.header_row = QWidget()
        header = FlowRow(self.header_row, 6)  # wraps in a narrow or zoomed window
        self.role_label = new_label(ROLE_TITLES.get(message.role, message.role), "RoleLabel")
        header.addWidget(self.role_label)
        self.state_label = new_label("", "MutedLabel")
        header.addWidget(self.state_label)
        header.start_end_group()
        self.branch_switcher = BranchSwitcher(self.header_row)
        self.branch_switcher.stepped.connect(
            lambda step: self.branch_step_requested.emit(self.message.id, step)
        )
        header.addWidget(self.branch_switcher)
        self.copy_button = action_button("Copy", "Copy this message as Markdown", self.copy)
        self.edit_button = action_button(
            "Edit", "Edit this message (starts a new branch)",
            lambda: self.edit_requested.emit(self.message.id),
        )
        self.regenerate_button = action_button(
            "Regenerate", "Write this reply again",
            lambda: self.regenerate_requested.emit(self.message.id),
        )
        self.retry_button = action_button(
            "Retry", "Answer this message (it has no reply yet)",
            lambda: self.retry_requested.emit(self.message.id),
        )
        self.retry_button.setVisible(False)
        self.delete_button = action_button(
            "Delete", "Delete this message (the chat goes on without it on a new branch; "
            "the version with it stays)", lambda: self.delete_requested.emit(self.message.id),
        )
        for button in (self.retry_button, self.copy_button, self.edit_button,
                       self.regenerate_button, self.delete_button):
            header.addWidget(button)
        self.edit_button.setVisible(message.role == "user")
        self.regenerate_button.setVisible(message.role == "assistant")
        layout.addWidget(self.header_row)
        if message.initiated_by == "user" and message.role == "assistant":
            # A tool the user ran (/read, !cmd): just its card, no "Assistant" header.
            self.header_row.setVisible(False)
            self.setProperty("role", "tool-only")
            layout.setContentsMargins(0, 0, 0, 0)

        self.body = MarkdownView(message.content, plain_prose=message.role == "user")
        layout.addWidget(self.body)
        self.body.setVisible(bool(message.content.strip()))
        self.cards_layout = QVBoxLayout()
        self.cards_layout.setSpacing(6)
        layout.addLayout(self.cards_layout)
        self.cards: dict[str, ToolCard] = {}
        for call in message.tool_calls:
            self.add_tool_call(call)
        self.continue_row = QWidget()
        more = vbox(self.continue_row, (0, 2, 0, 0), 2)
        self.continue_label = new_label(
            "The reply reached its length limit and stops here.", "MutedLabel", wrap=True)
        self.continue_button = action_button(
            "Continue", "Write more of this reply (Ctrl+Shift+Enter)",
            lambda: self.continue_requested.emit(self.message.id),
        )
        more.addWidget(self.continue_label)
        more.addWidget(self.continue_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.continue_row.setVisible(False)
        layout.addWidget(self.continue_row)
        self.footer = new_label("", "MessageFooter", wrap=True)
        self.footer.setVisible(False)
        layout.addWidget(self.footer)
        self._show_figures()
        self._update_state()

    # -- content ---------------------------------------------------------------------------
    def set_streaming_text(self, text: str) -> None:
        """Text still being written (the final message replaces it)."""
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
        self._show_figures()
        self._update_state()

    def _show_figures(self) -> None:
        """The reply's saved figures, so they come back with the chat or the branch."""
        if self.message.figures is not None:
            self.set_footer(stats_text(self.message.figures))

    def set_footer(self, text: str) -> None:
        """How fast the reply came, in a muted line under it."""
        self.footer.setText(text)
        self.footer.setToolTip(text)
        self.footer.setVisible(bool(text))

    def add_tool_call(self, call: ToolCall) -> ToolCard:
        card = ToolCard(call)
        self.cards[call.id] = card
        self.cards_layout.addWidget(card)
        return card

    def set_actions_enabled(self, enabled: bool) -> None:
        for button in (self.edit_button, self.regenerate_button, self.delete_button,
                       self.retry_button, self.continue_button):
            button.setEnabled(enabled)
        self.branch_switcher.setEnabled(enabled)

    def set_last(self, last: bool, idle: bool) -> None:
        """As the chat's last message: Retry on a question left without a reply, the
        length-limit hint with Continue on a reply cut off there (shown while idle)."""
        unanswered = last and idle and self.message.role == "user"
        figures = self.message.figures
        cut = last and self.message.role == "assistant" and figures is not None \
            and figures.cut_off and not self.message.stopped
        self.retry_button.setVisible(unanswered)
        self.continue_row.setVisible(cut)
        self.continue_button.setEnabled(idle)

    def _update_state(self) -> None:
        self.state_label.setText("stopped" if self.message.stopped else "")

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.message.content)


class BranchEndRow(QFrame):
    """Under the last message when this version of the chat ends there and another goes
    on after it (its last message was deleted): "This version ends here" and ``< n/n``;
    ``<`` shows the newest other version (``step_requested(previous_id, 0)``)."""

    step_requested = Signal(str, int)

    def __init__(
        self, index: int, count: int, previous_id: str, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("BranchEnd")
        layout = hbox(self, (14, 0, 14, 0), 6)
        others = count - 1
        self.label = new_label(
            "This version ends here; "
            + ("another goes on after this message (< shows it)." if others == 1
               else f"{others} others go on after this message (< shows them)."),
            "MutedLabel", wrap=True,
        )
        layout.addWidget(self.label, 1)
        self.switcher = BranchSwitcher(self)  # parented: shown alone it would be a window
        self.switcher.set_position(index - 1, count)
        self.switcher.stepped.connect(
            lambda step: self.step_requested.emit(previous_id, 0) if step < 0 else None
        )
        layout.addWidget(self.switcher)
