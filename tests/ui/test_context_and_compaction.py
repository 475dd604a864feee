"""The context bar, prune notices and compaction (live and from history)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from assistant.agent.events import ContextChanged, ContextUsage
from assistant.compaction.context_render import is_output
from assistant.compaction.events import (
    CompactionCancelled,
    CompactionFailed,
    TrimEvent,
    trim_text,
)
from assistant.compaction.summary.clean import parse_sections
from assistant.compaction.summary.grammar import SKELETON
from assistant.config import Settings
from assistant.conversation import CompactionReason
from assistant.ui.context_bar import ContextBar
from assistant.ui.message_widgets import MessageWidget
from assistant.ui.notices import CompactionNotice, NoticeWidget, PruneNotice
from assistant.ui.theme import current_colors
from assistant.ui.tool_card import ToolCard
from tests.fakes.scripted import ScriptedBackend

from .sample_chat import build_sample_chat, prune_event

LOREM_SUMMARY = """## Goal
- Answer questions about lorem ipsum

## Constraints & Preferences
- none

## Progress
### Done
- Read lorem ipsum dolor text
### In Progress
- Question about lorem ipsum
### Blocked
- none

## Key Decisions
- Keep lorem ipsum dolor

## Next Steps
- Answer more lorem ipsum

## Critical Context
- lorem ipsum dolor sit amet"""

FILLER = LOREM_SUMMARY.replace("lorem ipsum dolor sit amet", "nothing").replace(
    "lorem ipsum", "the work").replace("lorem ipsum dolor", "the work")


def _filler_again(msgs: list[dict[str, Any]]) -> str:
    """The second attempt asks again only for the sections that said nothing (under a
    grammar of those alone): answer it with FILLER's same nothing under each."""
    asked = re.search(r"said nothing specific under: (.+?)\. Write only", msgs[-1]["content"])
    assert asked is not None, "the second attempt is not a repair request"
    names, sections, parts = asked.group(1).split(", "), parse_sections(FILLER), []
    for sec in (s for s in SKELETON if s.name in names):
        lead = "" if not parts else ("\n" if sec.heading.startswith("###") else "\n\n")
        parts.append(lead + sec.heading + "\n" + "\n".join("- " + b for b in sections[sec.name]))
    return "".join(parts)


def _usage(tokens: int) -> ContextUsage:
    return ContextUsage(
        prompt_tokens=tokens,
        window=10_000,
        reserve=1_024,
        segments={
            "system": 300, "summary": 0, "conversation": tokens - 650, "tool_outputs": 150,
            "tools": 200,
        },
    )


def test_context_bar_levels_and_colors(qtbot) -> None:
    bar = ContextBar()
    qtbot.addWidget(bar)
    bar.set_usage(_usage(5_000))
    assert bar.level == "ok" and bar.label.text() == "5,000 / 10,000 (50%)"
    bar.set_usage(_usage(7_500))
    assert bar.level == "warning"
    assert current_colors().warning in bar.label.styleSheet()
    bar.set_usage(_usage(9_500))
    assert bar.level == "critical"
    assert current_colors().error in bar.label.styleSheet()
    bar.set_usage(_usage(7_000))
    assert bar.level == "ok"  # "above 70 %"


def test_the_bar_is_the_window_with_a_mark_where_the_history_is_kept_within(qtbot) -> None:
    """The measured target (2,048 of 10,000 here) is drawn as a mark on the window's bar
    and said in the tooltip; a prompt past it (a long latest message) is not a warning."""
    bar = ContextBar()
    qtbot.addWidget(bar)
    bar.resize(600, 20)
    bar.show()
    bar.set_usage(replace(_usage(1_800), target=2_048))
    assert bar.target_mark() == 2_048 / 10_000
    assert bar.label.text() == "1,800 / 10,000 (18%)"
    assert "History kept within 2,048 tokens (the mark)" in bar.toolTip()
    image = bar.bar.grab().toImage()
    x = round(bar.target_mark() * (image.width() - 1))  # type: ignore[operator]
    y = image.height() // 2
    assert image.pixelColor(x, y).name() == QColor(current_colors().text).name()
    bar.set_usage(replace(_usage(5_000), target=2_048))  # a 3,000-token latest message
    assert bar.level == "ok" and bar.target_mark() is not None
    bar.set_usage(_usage(1_800))  # no target: no mark, no line
    assert bar.target_mark() is None and "History kept within" not in bar.toolTip()


def test_context_bar_tooltip_has_exact_numbers_thresholds_and_counts(qtbot) -> None:
    bar = ContextBar()
    qtbot.addWidget(bar)
    policy = Settings().effective_policy(8192)
    bar.set_policy_text(policy.describe())
    bar.set_usage(_usage(7_512))
    bar.add_prune(1_240)
    bar.set_counts(bar.prunes, bar.pruned_tokens, 1)  # the window recounts after a compaction
    tip = bar.toolTip()
    assert "Prompt: 7,512 of 10,000 tokens" in tip
    assert "System prompt: 300" in tip and "Tool schemas: 200" in tip
    assert "Tool outputs: 150" in tip
    assert "Conversation: 6,862" in tip and "Summary: 0" in tip
    assert "Reserved for the reply: 1,024" in tip and "Free: 1,464" in tip
    assert "1 prune (1,240 tokens cleared), 1 compaction" in tip
    assert "local: window 8,192" in tip and "reserve 838" in tip


def test_sending_updates_the_context_bar_from_the_tokenizer(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["Sure."]))
    h.type_and_send("Count me")
    h.wait_idle()
    # After the reply the bar counts the chat as it stands: the prompt sent plus the reply.
    c = h.controller
    sent = h.backend.calls[-1]
    now = h.backend.count_prompt(
        [sent.messages[0], *(m.to_openai() for m in c.chat.conversation.messages)], sent.tools
    )
    bar = h.window.context_bar
    h.qtbot.waitUntil(lambda: bar.usage is not None and bar.usage.prompt_tokens == now)
    usage = bar.usage
    assert usage is not None and now > sent.prompt_tokens
    assert usage.window == 8192
    assert sum(usage.segments.values()) == usage.prompt_tokens
    assert usage.segments["system"] > 0 and usage.segments["tools"] > 0
    assert usage.segments["tool_outputs"] == 0


def test_tool_outputs_and_tool_schemas_are_separate_segments(make_window) -> None:
    """A file read shows as tool outputs, measured with the model's template, and the
    schemas as what they add to the system prompt; the tooltip names each."""
    h = make_window(backend=ScriptedBackend(["Read it."]))
    workspace = h.controller.settings.workspace_path()
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text("alpha beta gamma\n" * 60)
    h.type_and_send("/read notes.txt")
    h.wait_idle()
    h.type_and_send("What is in it?")
    h.wait_idle()
    # Between calls the bar is counted again (as when a reply finishes): what is checked
    # is what stays on screen, not the last call's count.
    during = h.window.context_bar.usage
    h.controller.measure_context()
    h.qtbot.waitUntil(lambda: h.window.context_bar.usage is not during, timeout=10_000)
    usage = h.window.context_bar.usage
    assert usage is not None
    backend = h.backend
    sent = backend.calls[-1].messages
    # The read was an earlier turn: its output is sent as a note ("[Output of read_file
    # ...]", docs/ANSWERS.md) and is still what the bar counts as tool outputs.
    tool = next(m for m in sent if is_output(m))
    assert tool["role"] == "user" and "alpha beta gamma" in tool["content"]
    anchor = [{"role": "system", "content": "."}]
    expected = backend.count_prompt([*anchor, tool]) - backend.count_prompt(anchor)
    assert usage.segments["tool_outputs"] == expected
    schemas = backend.count_prompt(sent[:1], backend.calls[-1].tools) - backend.count_prompt(
        sent[:1]
    )
    assert usage.segments["tools"] == schemas > 0
    assert sum(usage.segments.values()) == usage.prompt_tokens
    tip = h.window.context_bar.toolTip()
    for label in ("System prompt", "Summary", "Conversation", "Tool outputs", "Tool schemas"):
        assert f"  {label}: " in tip
    assert f"Tool outputs: {expected:,}" in tip
    assert f"Reserved for the reply: {usage.reserve:,}" in tip


def _open_sample(h):  # type: ignore[no-untyped-def]
    chat_id, prune_ids = build_sample_chat(h.controller.store)
    h.window._refresh_chats()
    h.window.open_chat(chat_id)
    return prune_ids


def test_compaction_is_a_divider_below_every_message_and_expands_to_the_summary(
    make_window, artifacts_dir
) -> None:
    h = make_window()
    _open_sample(h)
    entries = h.window.chat_view.entries()
    [notice] = [e for e in entries if isinstance(e, CompactionNotice)]
    assert notice.header.text() == "▸  The model now sees a summary of everything above"
    assert "Compacted from 8,912 to 3,104 tokens" in notice.meta.text()
    # every message of the branch is on screen, the summarized ones above the divider
    shown = [
        (e.message.content, entries.index(e))
        for e in entries
        if isinstance(e, MessageWidget) and e.message.content
    ]
    where = dict(shown)
    at = entries.index(notice)
    assert where["What is in my workspace?"] < at < where["Find every TODO in the text files."]
    assert not notice.details.isVisibleTo(notice)
    h.qtbot.mouseClick(notice.header, Qt.MouseButton.LeftButton)
    assert notice.details.isVisibleTo(notice)
    # exactly what the model receives: the record's summary, character for character
    record = h.controller.chat.conversation.compactions[-1]
    assert notice.summary_view.text() == record.summary
    assert h.window.context_bar.compactions == 1
    # recall's focus is on by default: the card names the replies written without it
    assert notice.focus_note.isVisibleTo(notice)
    assert "without this summary" in notice.focus_note.text()
    h.qtbot.wait(100)
    h.window.chat_view.ensureWidgetVisible(notice.focus_note, 0, 60)
    h.qtbot.wait(100)
    assert h.window.grab().save(str(artifacts_dir / "compaction-card-focus-note.png"))


def test_the_card_claims_the_summary_for_every_reply_when_recall_focus_is_off(
    make_window, tmp_path
) -> None:
    settings = Settings(workspace=str(tmp_path / "workspace"))
    settings.compaction.recall_focus = False
    h = make_window(settings=settings)
    _open_sample(h)
    [notice] = [e for e in h.window.chat_view.entries() if isinstance(e, CompactionNotice)]
    notice.set_expanded(True)
    assert notice.summary_view.isVisibleTo(notice)
    assert not notice.focus_note.isVisibleTo(notice)
    # turned on in Settings: the card on screen says it at once
    on = settings.model_copy(deep=True)
    on.compaction.recall_focus = True
    h.controller.apply_settings(on)
    h.qtbot.waitUntil(lambda: notice.focus_note.isVisibleTo(notice))


def test_prune_notice_and_pruned_card_can_show_the_original(make_window) -> None:
    h = make_window()
    prune_ids = _open_sample(h)
    h.window.bridge.post(ContextChanged(prune_event(prune_ids)))
    h.qtbot.waitUntil(lambda: any(isinstance(e, PruneNotice) for e in h.window.chat_view.entries()))
    [notice] = [e for e in h.window.chat_view.entries() if isinstance(e, PruneNotice)]
    assert "Cleared 1 old tool output, 1,240 tokens" in notice.text()
    card: ToolCard = next(c for c in h.window.chat_view.cards.values() if c.call.name == "grep")
    assert card.is_pruned and "output cleared" in card.header.text()
    card.set_expanded(True)
    assert card.pruned_row.isVisibleTo(card)
    assert not card.result_box.isVisibleTo(card)
    h.qtbot.mouseClick(card.show_original_button, Qt.MouseButton.LeftButton)
    assert card.result_box.isVisibleTo(card)
    assert "TODO book the venue" in card.result_box.toPlainText()
    assert h.window.context_bar.prunes == 1 and h.window.context_bar.pruned_tokens == 1240


def test_failed_cancelled_and_cut_context_events_are_notices_in_the_chat(make_window) -> None:
    h = make_window()
    cut = TrimEvent(("c",), 900, 400)
    events = (
        cut,
        CompactionFailed(CompactionReason.OVERFLOW, "the model stopped"),
        CompactionCancelled(CompactionReason.MANUAL),
    )
    for event in events:
        h.window.bridge.post(ContextChanged(event))

    def notices() -> list[tuple[str, str]]:
        entries = h.window.chat_view.entries()
        return [(e.level, e.text) for e in entries if isinstance(e, NoticeWidget)]

    h.qtbot.waitUntil(lambda: len(notices()) == 3)
    assert notices() == [
        ("info", trim_text(cut)),
        ("error", "Compaction failed: the model stopped"),
        ("info", "Compaction cancelled."),
    ]


def test_compacting_strip_shows_and_input_stays_usable(make_window) -> None:
    backend = ScriptedBackend()
    h = make_window(backend=backend)
    _long_chat(h)
    backend.delay_per_token = 0.1
    backend.enqueue(LOREM_SUMMARY)  # streamed slowly: about 6 s
    h.type_and_send("/compact")
    h.qtbot.waitUntil(lambda: h.window.status_strip.isVisible(), timeout=20_000)
    # The strip says what the summary is at (its prompt read, now written).
    assert h.window.status_strip.label.text().startswith("Summarizing older messages to make room")
    # The strip says what happens; the status bar only how to cancel it.
    assert h.window.status_label.text() == "Esc cancels the summary"
    assert h.window.status_strip.spinner.spinning
    assert h.window.send_button.text() == "Stop"
    assert h.window.input.isEnabled()
    h.qtbot.keyClicks(h.window.input, "still typing")
    assert h.window.input.toPlainText() == "still typing"
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    h.qtbot.waitUntil(lambda: not h.window.status_strip.isVisible(), timeout=20_000)
    h.wait_idle()
    assert h.window.input.toPlainText() == "still typing"
    assert h.window.status_label.text() == "Stopped"


def _long_chat(h, turns: int = 5) -> None:  # type: ignore[no-untyped-def]
    for i in range(turns):
        h.backend.enqueue(f"Answer {i}.")
        h.controller.submit(f"Question {i}: " + "lorem ipsum dolor sit amet " * 120)
        h.wait_idle()


def test_manual_compact_replaces_old_messages_with_a_notice(make_window) -> None:
    backend = ScriptedBackend()
    h = make_window(backend=backend)
    _long_chat(h)
    backend.enqueue(LOREM_SUMMARY)
    h.type_and_send("/compact")
    h.wait_idle()
    notices = [e for e in h.window.chat_view.entries() if isinstance(e, CompactionNotice)]
    assert len(notices) == 1
    record = h.controller.chat.conversation.compactions[-1]
    assert (
        f"Compacted from {record.tokens_before:,} to {record.tokens_after:,} tokens"
    ) in notices[0].meta.text()
    assert record.tokens_after < record.tokens_before
    assert h.window.context_bar.compactions == 1
    assert not h.window.status_strip.isVisible()
    assert h.window.status_label.text() == "Ready"  # the divider and the line say it


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_no_message_is_hidden_by_a_compaction_also_after_a_restart(
    make_window, artifacts_dir
) -> None:
    backend = ScriptedBackend()
    h = make_window(backend=backend)
    _long_chat(h)
    backend.enqueue(LOREM_SUMMARY)
    h.type_and_send("/compact")
    h.wait_idle()
    backend.enqueue("Answer after.")
    h.type_and_send("the message just sent")
    h.wait_idle()

    def shown(window) -> list[str]:  # type: ignore[no-untyped-def]
        return [
            e.message.content for e in window.chat_view.entries() if isinstance(e, MessageWidget)
        ]

    sent = [m.content for m in h.controller.chat.conversation.messages if m.role != "system"]
    assert len(sent) == 12
    assert shown(h.window) == sent  # 0 messages hidden by the compaction
    entries = h.window.chat_view.entries()
    [divider] = [e for e in entries if isinstance(e, CompactionNotice)]
    assert entries.index(divider) > 0
    chat_id = h.controller.chat.chat_id
    h.window.close()  # a restart: the new window reopens the chat from its file
    again = make_window(backend=ScriptedBackend())
    assert again.controller.chat.chat_id == chat_id
    assert shown(again.window) == sent
    [divider] = [e for e in again.window.chat_view.entries() if isinstance(e, CompactionNotice)]
    again.qtbot.mouseClick(divider.header, Qt.MouseButton.LeftButton)
    again.qtbot.wait(100)
    again.window.chat_view.ensureWidgetVisible(divider, 0, 120)
    again.qtbot.wait(100)
    assert again.window.grab().save(str(artifacts_dir / "compaction-divider-after-restart.png"))


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_escape_cancels_compaction_and_queued_message_is_sent_after(make_window) -> None:
    backend = ScriptedBackend()
    h = make_window(backend=backend)
    _long_chat(h)
    backend.delay_per_token = 0.1
    backend.enqueue(LOREM_SUMMARY)  # streamed slowly: about 6 s
    h.type_and_send("/compact")
    h.qtbot.waitUntil(lambda: h.window.status_strip.isVisible(), timeout=20_000)
    # The strip shows as the compaction starts; Esc must land while the summary streams.
    h.qtbot.waitUntil(lambda: LOREM_SUMMARY not in backend.replies, timeout=20_000)
    backend.enqueue("Answer after compaction.")
    h.type_and_send("queued while compacting")
    assert h.controller.queue == ["queued while compacting"]
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    h.qtbot.waitUntil(lambda: not h.window.status_strip.isVisible(), timeout=20_000)
    backend.delay_per_token = 0.0
    h.wait_idle()
    assert h.controller.chat.conversation.compactions == []
    contents = [m.content for m in h.controller.chat.conversation.messages]
    assert contents[-2:] == ["queued while compacting", "Answer after compaction."]



@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_compaction_card_says_which_summarizer_wrote_it_and_why(make_window, artifacts_dir) -> None:
    backend = ScriptedBackend()
    h = make_window(backend=backend)
    _long_chat(h)
    backend.enqueue(LOREM_SUMMARY)
    h.type_and_send("/compact")
    h.wait_idle()
    _long_chat(h, turns=3)
    backend.enqueue(FILLER, _filler_again)  # says nothing twice: the extractive fallback writes it
    h.type_and_send("/compact")
    h.wait_idle()
    first, second = [e for e in h.window.chat_view.entries() if isinstance(e, CompactionNotice)]
    assert first.summarizer_label.text() == (
        "Summary written by the model under the summary grammar."
    )
    assert second.summarizer_label.text() == (
        "Summary by the extractive fallback: the model's summaries were rejected twice "
        "(the Goal names nothing from the conversation)."
    )
    # On the card, in plain words; the technical account is one click away (issue 43).
    assert "a short summary made without the assistant" in second.plain.text()
    assert second.plain.isVisibleTo(second) and not second.summarizer_label.isVisibleTo(second)
    second.set_expanded(True)
    assert second.summarizer_label.isVisibleTo(second)
    h.qtbot.wait(100)
    h.window.chat_view.ensureWidgetVisible(first, 0, 0)
    h.qtbot.wait(100)
    assert h.window.grab().save(str(artifacts_dir / "compaction-card-summarizer.png"))
