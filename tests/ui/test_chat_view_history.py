"""The chat view shows every message of a branch, renders long chats on demand, and keeps
each reply's figures (issue 26, deliverables 1 and 5)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractSlider

from assistant.conversation import (
    CompactionRecord,
    Conversation,
    Message,
    ReplyFigures,
    ToolCall,
)
from assistant.ui.chat_view import PAGE, ChatView
from assistant.ui.message_widgets import MessageWidget
from assistant.ui.notices import CompactionNotice
from assistant.ui.tool_card import ToolCard
from tests.fakes.scripted import ScriptedBackend


def _huge_conversation(turns: int = 1000, every: int = 250) -> Conversation:
    """``3 * turns`` messages (user, assistant with a tool call, its result) with a
    compaction every ``every`` turns."""
    conv = Conversation()
    for i in range(turns):
        conv.append(Message(role="user", content=f"question {i}"))
        call = ToolCall(name="read_file", arguments={"path": f"f{i}.txt"})
        conv.append(Message(role="assistant", content=f"reading {i}", tool_calls=[call]))
        conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                            content=f"content {i}"))
        if i and i % every == 0:
            conv.add_compaction(CompactionRecord(
                summary=f"## Goal\nsummary up to {i}", first_kept_id=None,
                last_summarized_id=conv.messages[-1].id, tokens_before=9000,
                tokens_after=3000, reason="threshold", count=i // every,
            ))
    return conv


def test_a_chat_of_thousands_of_messages_builds_one_page_then_more_on_scroll(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(700, 600)
    view.show()
    view.set_conversation(_huge_conversation())
    qtbot.wait(50)
    # 3,000 messages: only the newest page of units is built (a unit is a message, or an
    # assistant message with the results of its calls, or a compaction divider)
    assert len(view.findChildren(MessageWidget)) == PAGE
    assert len(view.findChildren(CompactionNotice)) == 0  # the last one is 250 turns up
    cards = view.findChildren(ToolCard)
    assert len(cards) == PAGE // 2 and all(c.result is not None for c in cards)
    assert view.entries()[-1].message.content == "reading 999"  # type: ignore[attr-defined]
    pending = view.pending_count
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() == bar.maximum() > 0)
    # the user scrolls to the top: one more page appears above, the view stays put
    first = view.entries()[0]
    bar.triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)
    qtbot.waitUntil(lambda: view.pending_count == pending - PAGE)
    assert len(view.findChildren(MessageWidget)) == 2 * PAGE
    # the entry that was at the top is still where it was
    qtbot.waitUntil(lambda: bar.value() > 0)
    assert abs(first.y() - bar.value()) < 60
    # the rest stays one page at a time
    qtbot.mouseClick(view.more_button, Qt.MouseButton.LeftButton)
    assert len(view.findChildren(MessageWidget)) == 3 * PAGE


def test_every_message_is_shown_with_a_divider_at_each_compaction(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.set_conversation(_huge_conversation(turns=60, every=20), page=1000)
    entries = view.entries()
    assert len([e for e in entries if isinstance(e, MessageWidget)]) == 120
    dividers = [e for e in entries if isinstance(e, CompactionNotice)]
    assert [d.superseded for d in dividers] == [True, False]
    assert dividers[-1].header.text().endswith("The model now sees a summary of everything above")
    assert "replaced" in dividers[0].header.text()
    above = entries[entries.index(dividers[-1]) - 1]
    assert above.message.content == "reading 40"  # type: ignore[attr-defined]
    below = entries[entries.index(dividers[-1]) + 1]
    assert below.message.content == "question 41"  # type: ignore[attr-defined]
    dividers[-1].set_expanded(True)
    assert dividers[-1].summary_view.text() == "## Goal\nsummary up to 40"


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_reply_figures_come_back_when_the_chat_and_the_branch_are_shown_again(make_window):
    h = make_window(backend=ScriptedBackend(["first answer", "second answer", "again"]))
    h.type_and_send("hello")
    h.wait_idle()
    reply = h.controller.chat.conversation.messages[-1]
    assert isinstance(reply.figures, ReplyFigures)
    widget = h.window.chat_view.message_widgets[reply.id]
    footer = widget.footer.text()
    assert "tokens/s" in footer or "to first token" in footer
    chat_id = h.controller.chat.chat_id
    assert chat_id is not None
    # another chat, then back: the figures are rendered from the saved reply
    h.window.new_chat()
    h.window.open_chat(chat_id)
    again = h.window.chat_view.message_widgets[reply.id]
    assert again is not widget and again.footer.text() == footer
    assert again.footer.isVisibleTo(again)
    # another branch (regenerate), then back with < : the figures of version 1 are there
    h.qtbot.mouseClick(again.regenerate_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    new = h.controller.chat.conversation.messages[-1]
    assert new.id != reply.id and new.figures is not None
    switcher = h.window.chat_view.message_widgets[new.id].branch_switcher
    h.qtbot.mouseClick(switcher.prev_button, Qt.MouseButton.LeftButton)
    h.qtbot.waitUntil(lambda: reply.id in h.window.chat_view.message_widgets)
    assert h.window.chat_view.message_widgets[reply.id].footer.text() == footer
