"""The chat transcript: a scroll area of message widgets, tool cards and notices.

It renders a :class:`Conversation`, then follows the agent's events live. Every message of
the branch is shown; a compaction is a divider at its cut. Long chats render on demand, a
page of :data:`PAGE` units (a message with the tool results answering its calls) at a time
as the user scrolls to the top. The view sticks to the bottom while not scrolled up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QApplication, QScrollArea, QWidget

from assistant.conversation import CompactionRecord, Conversation, Message, ToolCall
from assistant.service.values import HelpRow, is_branch_summary, summary_text
from assistant.ui.column import LayoutT, ReadableColumn
from assistant.ui.message_widgets import BranchEndRow, MessageWidget
from assistant.ui.notices import CompactionLine, CompactionNotice, NoticeWidget, PruneNotice
from assistant.ui.parts import push_button, vbox, vertical_scroller
from assistant.ui.tool_card import ToolCard

#: Units (a message with its tool results, or a compaction divider) rendered when a chat
#: opens, and per page loaded when the user scrolls to the top.
PAGE = 80

Builder = Callable[[], list[QWidget]]
BranchInfoProvider = Callable[[str], tuple[int, int]]
#: ``(index, count, previous version's first message)`` when the shown chat ends where
#: other versions go on, else None (see ``ChatSlot.branch_end``).
BranchEndProvider = Callable[[], tuple[int, int, str] | None]


def cut_index(conv: Conversation, record: CompactionRecord) -> int | None:
    """Index of the first message a compaction kept (None if not on this branch)."""
    try:
        if record.first_kept_id is not None:
            return conv.index_of(record.first_kept_id)
        if record.last_summarized_id is not None:
            return conv.index_of(record.last_summarized_id) + 1
    except KeyError:
        return None
    return len(conv.messages)


class ChatView(QScrollArea):
    edit_requested = Signal(str)
    regenerate_requested = Signal(str)
    delete_requested = Signal(str)
    branch_step_requested = Signal(str, int)
    #: Answer the last message again (a question left without a reply).
    retry_requested = Signal(str)
    #: Write more of the last reply (it stopped at the length limit).
    continue_requested = Signal(str)
    #: Entries were added or removed (the window shows the welcome page while empty).
    entries_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ChatView")
        vertical_scroller(self)
        self._inner = QWidget()
        self._inner.setObjectName("ChatViewport")
        self._layout = vbox(self._inner, (24, 16, 24, 16), 12)
        self.column = ReadableColumn(self._layout)  # centred, a readable width at most
        self.more_button = push_button("Show earlier messages", self.show_earlier)
        self.more_button.setVisible(False)
        self._layout.addWidget(self.more_button, 0, Qt.AlignmentFlag.AlignHCenter)
        self._layout.addStretch(1)
        self.setWidget(self._inner)
        self._stick = True
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._range_changed)
        bar.valueChanged.connect(self._value_changed)
        bar.actionTriggered.connect(self._user_scrolled)

        self.branch_info: BranchInfoProvider | None = None
        self.branch_end: BranchEndProvider | None = None
        self.end_row: BranchEndRow | None = None
        #: Recall's focus is on: the compaction cards say which replies leave the summary out.
        self.recall_focus = False
        self._pending: list[Builder] = []
        #: Distance from the bottom to keep while earlier entries are laid out above.
        self._anchor: int | None = None
        self.message_widgets: dict[str, MessageWidget] = {}
        self.cards: dict[str, ToolCard] = {}
        self.streaming: MessageWidget | None = None
        self._streamed = ""
        self._rendered: set[str] = set()
        self._actions_enabled = True
        self.zoom = 100
        #: Speed figures of the model call that just finished, for the reply it wrote.
        self._pending_footer = ""

    # -- layout helpers ----------------------------------------------------------------
    def entries(self) -> list[QWidget]:
        """The rendered entries, top to bottom (without the "earlier" button)."""
        out: list[QWidget] = []
        for i in range(self._layout.count()):
            item = self._layout.itemAt(i)
            widget = item.widget() if item is not None else None
            if widget is not None and widget is not self.more_button:
                out.append(widget)
        return out

    def set_zoom(self, percent: int) -> None:
        """The zoom the transcript is shown at (``theme.apply_zoom`` scales every widget's
        text, code included; code is created at the zoom in force)."""
        self.zoom = percent

    def in_column(self, layout: LayoutT) -> LayoutT:
        """``layout`` (the composer's) kept to the messages' column width, centred."""
        self.composer_column = ReadableColumn(layout)
        return layout

    @property
    def is_empty(self) -> bool:
        return not self.entries() and not self._pending

    def _append(self, widget: QWidget) -> QWidget:
        self._anchor = None  # new entries at the bottom: follow the usual rule
        self._layout.insertWidget(self._layout.count() - 1, widget)
        self.entries_changed.emit()
        return widget

    def _prepend(self, widgets: list[QWidget]) -> None:
        for offset, widget in enumerate(widgets):
            self._layout.insertWidget(1 + offset, widget)
        self.entries_changed.emit()

    def _remove(self, widget: QWidget) -> None:
        self._layout.removeWidget(widget)
        widget.deleteLater()
        self.entries_changed.emit()

    def clear(self) -> None:
        for widget in self.entries():
            self._layout.removeWidget(widget)
            widget.hide()  # not painted over the next chat until deleted
            widget.deleteLater()
        self.message_widgets.clear()
        self.end_row = None
        self.cards.clear()
        self._rendered.clear()
        self.streaming = None
        self._pending = []
        self._anchor = None
        self.more_button.setVisible(False)
        self._stick = True
        self.entries_changed.emit()

    # -- full render -------------------------------------------------------------------
    def set_conversation(self, conv: Conversation, page: int = PAGE) -> None:
        """Render a whole conversation (a chat was opened, a branch switched, compacted):
        the newest ``page`` units now, the rest on demand."""
        self.setUpdatesEnabled(False)
        try:
            self.clear()
            builders = self._builders(conv)
            self._pending = builders[:-page] if len(builders) > page else []
            for build in builders[-page:]:
                for widget in build():
                    self._append(widget)
            self._add_end_row()
            self.more_button.setVisible(bool(self._pending))
            self._mark_last()
            self._lay_out_now()
        finally:
            self.setUpdatesEnabled(True)
        self.scroll_to_bottom()

    def _lay_out_now(self) -> None:
        """Show the new entries and lay them out before anything is painted (else the
        first frame after a chat switch or a compaction has them piled up at the top)."""
        for widget in self.entries():
            if not widget.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide):
                widget.show()
        QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def show_earlier(self) -> None:
        """Render one more page of older entries above, keeping the view where it was."""
        if not self._pending:
            return
        chunk, self._pending = self._pending[-PAGE:], self._pending[:-PAGE]
        widgets = [w for build in chunk for w in build()]
        bar = self.verticalScrollBar()
        self._stick = False
        self._anchor = bar.maximum() - bar.value()
        self._prepend(widgets)
        self.more_button.setVisible(bool(self._pending))

    def _builders(self, conv: Conversation) -> list[Builder]:
        """One deferred constructor per unit (a compaction divider; a message with the tool
        results answering its calls), so off-screen history costs nothing until shown."""
        dividers: dict[int, list[CompactionRecord]] = {}
        placed = [
            (cut, record)
            for record in conv.compactions
            if (cut := cut_index(conv, record)) is not None
        ]
        for cut, record in placed:
            dividers.setdefault(cut, []).append(record)
        latest = placed[-1][1].id if placed else None
        builders: list[Builder] = []
        unit: list[Message] = []

        def flush() -> None:
            if unit:
                builders.append(partial(self._make_unit, list(unit)))
                unit.clear()

        for index, msg in enumerate([*conv.messages, None]):
            for record in dividers.get(index, []):
                flush()
                builders.append(partial(self._make_compaction, record, record.id != latest))
            if msg is None:
                break
            if msg.role != "tool":
                flush()
            unit.append(msg)
        flush()
        return builders

    # -- entries -----------------------------------------------------------------------
    def _add_end_row(self) -> None:
        """The switcher under the last message when this version ends where others go on."""
        end = self.branch_end() if self.branch_end is not None else None
        if end is None or not self.message_widgets:
            return
        self.end_row = BranchEndRow(*end)
        self.end_row.step_requested.connect(self.branch_step_requested)
        self.end_row.switcher.setEnabled(self._actions_enabled)
        self._append(self.end_row)

    def _drop_end_row(self) -> None:
        """The chat goes on here: the new message is a version of its own (``< >``)."""
        row, self.end_row = self.end_row, None
        if row is not None:
            self._remove(row)

    def set_recall_focus(self, on: bool) -> None:
        """The compaction cards say which replies leave the summary out (recall's focus)."""
        self.recall_focus = on
        for card in self._inner.findChildren(CompactionNotice):
            card.focus_note.setVisible(on)

    def _make_compaction(self, record: CompactionRecord, superseded: bool) -> list[QWidget]:
        return [CompactionNotice(record, superseded=superseded, recall_focus=self.recall_focus)]

    def _make_unit(self, messages: list[Message]) -> list[QWidget]:
        return [w for msg in messages if (w := self._make_message(msg)) is not None]

    def _make_message(self, msg: Message) -> QWidget | None:
        self._rendered.add(msg.id)
        if msg.role == "system":
            return None
        if msg.role == "tool":
            card = self.cards.get(msg.tool_call_id or "")
            if card is not None:
                card.set_result(msg)
                return None
            card = ToolCard(ToolCall(id=msg.tool_call_id or msg.id, name=msg.name or "tool"))
            card.set_result(msg)
            self.cards[card.call.id] = card
            return card
        if is_branch_summary(msg):
            return NoticeWidget("info", "Summary of the branch you left:\n" + summary_text(msg))
        return self._adopt(MessageWidget(msg), msg)

    def _adopt(self, widget: MessageWidget, msg: Message) -> MessageWidget:
        widget.edit_requested.connect(self.edit_requested)
        widget.regenerate_requested.connect(self.regenerate_requested)
        widget.delete_requested.connect(self.delete_requested)
        widget.branch_step_requested.connect(self.branch_step_requested)
        widget.retry_requested.connect(self.retry_requested)
        widget.continue_requested.connect(self.continue_requested)
        widget.set_actions_enabled(self._actions_enabled)
        self.message_widgets[msg.id] = widget
        self.cards.update(widget.cards)
        if self.branch_info is not None:
            try:
                index, count = self.branch_info(msg.id)
            except (KeyError, ValueError):
                index, count = 1, 1
            widget.branch_switcher.set_position(index - 1, count)
        return widget

    # -- live events -------------------------------------------------------------------
    def add_message(self, msg: Message) -> None:
        self._drop_end_row()
        if msg.id in self._rendered:
            # Already shown by a re-render (a compaction mid-turn); drop the live copy.
            self._drop_streaming()
            return
        if msg.role == "assistant" and self.streaming is not None:
            self._rendered.add(msg.id)
            widget = self.streaming
            self.streaming = None
            widget.set_message(msg)
            self._take_footer(widget)
            self._adopt(widget, msg)
            self._mark_last()
            return
        entry = self._make_message(msg)
        if isinstance(entry, MessageWidget) and msg.role == "assistant":
            self._take_footer(entry)
        if entry is not None:
            self._append(entry)
        self._mark_last()

    def set_reply_footer(self, text: str) -> None:
        """A model call's figures, under the reply it wrote (streamed or next to come)."""
        if self.streaming is not None:
            self.streaming.set_footer(text)
        else:
            self._pending_footer = text

    def _take_footer(self, widget: MessageWidget) -> None:
        if self._pending_footer:
            widget.set_footer(self._pending_footer)
            self._pending_footer = ""

    def append_delta(self, text: str) -> None:
        if self.streaming is None:
            self._drop_end_row()
            self.streaming = MessageWidget(Message(role="assistant", content=""))
            self.streaming.set_actions_enabled(False)
            self._append(self.streaming)
            self._streamed = ""
        self._streamed += text
        self.streaming.set_streaming_text(self._streamed)

    def end_streaming(self, stopped: bool = False) -> None:
        """The turn ended; a bubble that got no final message is kept as it was."""
        self._pending_footer = ""
        widget, self.streaming = self.streaming, None
        if widget is not None and not widget.message.content and not self._streamed.strip():
            self._remove(widget)
        elif widget is not None:
            widget.state_label.setText("stopped" if stopped else "")
        self._mark_last()

    def _mark_last(self) -> None:
        """Only the chat's last message offers Retry (no reply yet) or Continue (cut off)."""
        last = next((e for e in reversed(self.entries()) if isinstance(e, MessageWidget)
                     and e.message.content.strip()), None)
        for widget in self.message_widgets.values():
            widget.set_last(widget is last, self._actions_enabled)

    def _drop_streaming(self) -> None:
        widget, self.streaming = self.streaming, None
        if widget is not None:
            self._remove(widget)

    @property
    def streaming_text(self) -> str:
        return self._streamed if self.streaming is not None else ""

    def tool_call_started(self, call: ToolCall) -> None:
        if call.id not in self.cards:
            card = ToolCard(call)
            self.cards[call.id] = card
            self._append(card)

    def add_notice(self, level: str, text: str, *, rows: Sequence[HelpRow] = ()
                   ) -> NoticeWidget:
        widget = NoticeWidget(level, text, rows=rows)
        self._append(widget)
        return widget

    def add_prune_notice(self, message_ids: list[str], tokens: int) -> PruneNotice:
        for mid in message_ids:
            for card in self.cards.values():
                if card.result is not None and card.result.id == mid:
                    card.mark_pruned()
        notice = PruneNotice(len(message_ids), tokens)
        self._append(notice)
        return notice

    def add_compaction_line(self, record: CompactionRecord) -> CompactionLine:
        """A line at the bottom with a button to the divider (often out of view)."""
        line = CompactionLine(record)
        line.show_button.clicked.connect(lambda: self.show_divider(record.id))
        self._append(line)
        self._lay_out_now()  # with the chat just drawn again: in place before a paint
        return line

    def show_divider(self, record_id: str) -> CompactionNotice | None:
        """Scroll to a compaction's divider (rendering older pages if needed) and open it."""
        while True:
            found = [e for e in self.entries()
                     if isinstance(e, CompactionNotice) and e.record.id == record_id]
            if found or not self._pending:
                break
            self.show_earlier()
        if not found:
            return None
        divider = found[0]
        divider.set_expanded(True)
        self._stick = False
        self.ensureWidgetVisible(divider.header, 0, 60)
        return divider

    def set_actions_enabled(self, enabled: bool) -> None:
        self._actions_enabled = enabled
        for widget in self.message_widgets.values():
            widget.set_actions_enabled(enabled)
        self._mark_last()
        if self.end_row is not None:
            self.end_row.switcher.setEnabled(enabled)

    def last_user_message(self) -> Message | None:
        for widget in reversed(list(self.message_widgets.values())):
            if widget.message.role == "user":
                return widget.message
        return None

    # -- scrolling ---------------------------------------------------------------------
    def scroll_to_bottom(self) -> None:
        self._stick = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _range_changed(self, _minimum: int, maximum: int) -> None:
        if self._anchor is not None:
            self.verticalScrollBar().setValue(max(0, maximum - self._anchor))
        elif self._stick:
            self.verticalScrollBar().setValue(maximum)

    def _user_scrolled(self, _action: int) -> None:
        """The user moved the view (wheel, keys, scroll bar): stop holding the position
        kept while an earlier page was laid out."""
        self._anchor = None

    def _value_changed(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._stick = value >= bar.maximum() - 40
        if value <= bar.minimum() < bar.maximum() and self._pending and self._anchor is None:
            self.show_earlier()  # scrolled to the top: the next page of history
