"""The setting for compaction ahead of time, through the window: on by default (as
measured: the summary's wait leaves the turn), its tooltip says what it costs and saves,
turned off it is saved and the idle model writes no summary in the background."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from assistant import paths
from assistant.compaction.request import CallRequest
from assistant.compaction.summary import DEFERRED_NOTE
from assistant.config import Settings, load_settings
from assistant.ui.notices import CompactionLine, CompactionNotice
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness

SUMMARY = "\n\n".join([
    "## Goal\n- Answer questions about lorem ipsum",
    "## Constraints & Preferences\n- none",
    "## Progress\n### Done\n- Answered questions about lorem ipsum\n### In Progress\n"
    "- Answer about lorem ipsum\n### Blocked\n- none",
    "## Key Decisions\n- Answer each question about lorem ipsum",
    "## Next Steps\n- Answer the next question about lorem",
    "## Critical Context\n- The questions are about lorem ipsum dolor",
])


def _model(msgs: list[dict[str, Any]]) -> str:
    last = str(msgs[-1].get("content") or "").lower()
    return SUMMARY if "summar" in last else "Noted."


def _summary_calls(backend: ScriptedBackend) -> int:
    return sum("summar" in str(c.messages[-1].get("content", "")).lower()
               for c in backend.calls)


def _fill_past_ahead_level(h: Harness) -> None:
    """Turns until the chat is past the fill level where the summary is written ahead."""
    engine = h.controller.model.engine
    assert engine is not None
    threshold = engine.controller.policy().window - engine.controller.policy().reserve
    i = 0
    def filled() -> int:
        conv = h.controller.chat.conversation
        return engine.controller.measure(CallRequest(conv, "")).prompt_tokens

    while filled() < 0.75 * threshold:
        h.type_and_send(f"Question {i}: " + "lorem ipsum dolor sit amet " * 30)
        h.wait_idle()
        i += 1
        assert i < 30


def test_the_setting_is_on_by_default_and_says_what_it_costs_and_saves(make_window) -> None:
    h = make_window()
    dialog = h.window.open_settings()
    box = dialog.compact_ahead
    assert box.isChecked()
    tip = box.toolTip()
    assert "Costs:" in tip and "Saves:" in tip and "idle" in tip
    dialog.reject()


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_turned_off_it_is_saved_and_no_summary_is_written_ahead(
    make_window, tmp_path: Path
) -> None:
    backend = ScriptedBackend([_model] * 100, window=4000, trained_context=4000)
    h = make_window(backend=backend, settings=Settings(workspace=str(tmp_path / "ws")))
    dialog = h.window.open_settings()
    dialog.show_page(next(p for p in dialog.pages if p.isAncestorOf(dialog.compact_ahead)))
    h.qtbot.waitUntil(dialog.compact_ahead.isVisible)
    h.qtbot.mouseClick(dialog.compact_ahead, Qt.MouseButton.LeftButton)
    assert not dialog.compact_ahead.isChecked()
    h.qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    saved = json.loads(paths.settings_file().read_text(encoding="utf-8"))
    assert saved["compaction"]["compact_ahead"] is False
    assert load_settings().settings.compaction.compact_ahead is False  # as a restart reads it
    _fill_past_ahead_level(h)
    h.qtbot.wait(200)  # an idle worker would have started the summary by now
    assert h.controller._ahead is None and _summary_calls(backend) == 0
    # Turned on again, the idle model writes the summary at once.
    dialog = h.window.open_settings()
    dialog.compact_ahead.setChecked(True)
    h.qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    h.qtbot.waitUntil(lambda: _summary_calls(backend) > 0, timeout=20_000)
    h.qtbot.waitUntil(lambda: h.controller._ahead is None, timeout=20_000)
    assert "Summary for the next compaction ready" in h.window.status_label.text()


def _slow_model(msgs: list[dict[str, Any]]) -> str:
    """A summary takes 0.3 s before its first word: a user who sends at once stops every
    one being written ahead."""
    if "summar" in str(msgs[-1].get("content") or "").lower():
        time.sleep(0.3)
    return _model(msgs)


def test_a_compaction_with_nothing_written_ahead_says_the_code_wrote_it(
    make_window, tmp_path: Path, artifacts_dir: Path
) -> None:
    """The user sends every message at once (no summary is ever written ahead): the
    compaction does not wait for the model, and its card and the line under the message
    say that the code wrote the summary and the model writes the next one while they read."""
    backend = ScriptedBackend([_slow_model] * 100, window=4000, trained_context=4000)
    h = make_window(backend=backend, settings=Settings(workspace=str(tmp_path / "ws")))
    i = 0
    while not h.controller.chat.conversation.compactions:
        # Pasted and sent at once (typing it key by key takes longer than a summary).
        h.window.input.setPlainText(f"Question {i}: " + "lorem ipsum dolor sit amet " * 30)
        h.qtbot.keyClick(h.window.input, Qt.Key.Key_Return)
        h.wait_idle()
        i += 1
        assert i < 30, "the chat never compacted"
    # The code wrote it in the turn (the model's summary, 0.3 s, was not waited for).
    record = h.controller.chat.conversation.compactions[0]
    assert record.summarizer == "extractive" and record.summarizer_note == DEFERRED_NOTE
    card = next(e for e in h.window.chat_view.entries() if isinstance(e, CompactionNotice))
    words = ("Summary written by the code at once, without waiting for the model; the "
             "model writes the next summary while you read.")
    # In plain words on the card; the technical account one click away (the header).
    assert "a quick summary made at once" in card.plain.text()
    assert not card.summarizer_label.isVisibleTo(card)
    card.set_expanded(True)
    assert card.summarizer_label.text() == words
    assert card.summarizer_label.isVisibleTo(card)
    line = h.window.chat_view.findChildren(CompactionLine)
    assert line and "the assistant writes a fuller one while you read" in line[-1].label.text()
    assert "code" not in line[-1].label.text()
    h.qtbot.wait(100)
    h.window.chat_view.ensureWidgetVisible(card, 0, 0)
    h.qtbot.wait(100)
    assert h.window.grab().save(str(artifacts_dir / "compaction-card-code-now.png"))
