"""A compaction inside the turn shows its progress like prompt reading: tokens done, speed,
time left; Esc stops it and the chat stays usable."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt

from assistant.service.events import PrefillProgress
from assistant.ui.progress_strips import compaction_text
from tests.fakes.scripted import ScriptedBackend

from .test_context_and_compaction import LOREM_SUMMARY


def test_compaction_text() -> None:
    assert compaction_text(PrefillProgress(100, 1000)).startswith(
        "Summarizing older messages to make room: reading 100 of 1,000 tokens")
    timed = compaction_text(PrefillProgress(500, 1000, tokens_per_s=50.0, eta_s=10.0))
    assert "50 tokens/s" in timed and "about 10 s left" in timed
    assert "writing the summary" in compaction_text(PrefillProgress(1000, 1000))
    # llama.cpp reads all but the last token before writing: the reading is over there
    writing = compaction_text(PrefillProgress(999, 1000, tokens_per_s=50.0, eta_s=0.0), 75.0)
    assert writing.endswith("writing the summary… 1 min 15 s so far")
    # Before the first batch is read there is no speed yet: the time so far, ticking.
    first = compaction_text(PrefillProgress(4, 1567), None, 12.0)
    assert first.endswith("reading 4 of 1,567 tokens · estimating the time left… 12 s so far")


def test_the_compaction_strip_shows_the_summary_prompt_being_read(
    make_window, artifacts_dir
) -> None:
    backend = ScriptedBackend()
    h = make_window(backend=backend)
    for i in range(5):
        backend.enqueue(f"Answer {i}.")
        h.controller.submit(f"Question {i}: " + "lorem ipsum dolor sit amet " * 120)
        h.wait_idle()
    backend.reset_kv_cache()  # nothing cached: the summary's whole prompt is read
    backend.prefill_batch = 32
    backend.delay_per_batch = 0.05
    backend.enqueue(LOREM_SUMMARY)
    h.type_and_send("/compact")
    h.qtbot.waitUntil(lambda: "tokens/s" in h.window.status_strip.label.text(), timeout=30_000)
    text = h.window.status_strip.label.text()
    assert text.startswith("Summarizing older messages to make room: reading ")
    assert "left" in text
    h.window.grab().save(str(artifacts_dir / "compaction-progress.png"))
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    h.wait_idle()
    assert not h.window.status_strip.isVisible()
    backend.prefill_batch = 0
    h.type_and_send("Hello?")
    h.wait_idle()
    last = h.controller.chat.conversation.messages[-2:]
    assert last[0].content == "Hello?" and last[1].role == "assistant" and last[1].content


def test_the_strip_counts_down_between_reports_and_then_counts_the_writing(qtbot) -> None:
    from assistant.ui.progress_strips import CompactionStrip

    strip = CompactionStrip()
    qtbot.addWidget(strip)
    strip.start()
    assert strip.text == "Summarizing older messages to make room…"
    assert strip.bar.maximum() == 0  # busy until the first count
    strip.update_progress(PrefillProgress(512, 1567, tokens_per_s=200.0, eta_s=5.0))
    assert "about 5 s left" in strip.text and strip.bar.value() == round(512 / 1567 * 1000)
    # No new report: the time left counts down (a tick can come late on a loaded machine,
    # so the count may pass a number between two polls).
    qtbot.waitUntil(lambda: re.search(r"about [1-4] s left", strip.text) is not None,
                    timeout=5_000)
    strip.update_progress(PrefillProgress(1566, 1567, tokens_per_s=200.0, eta_s=0.0))
    assert strip.text.endswith("writing the summary…") and strip.bar.maximum() == 0
    qtbot.waitUntil(lambda: re.search(r" [1-9]\d* s so far", strip.text) is not None,
                    timeout=5_000)
    # A second call of the summarizer reads its prompt anew: back to the count.
    strip.update_progress(PrefillProgress(100, 900, tokens_per_s=200.0, eta_s=4.0))
    assert "reading 100 of 900" in strip.text and strip.bar.maximum() == 1000
    strip.stop()
    assert not strip.isVisible() and not strip.spinner.spinning
