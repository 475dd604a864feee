"""A compaction inside the turn shows its progress like prompt reading: tokens done, speed,
time left; Esc stops it and the chat stays usable."""

from __future__ import annotations

from PySide6.QtCore import Qt

from assistant.service.events import PrefillProgress
from assistant.ui.prompt_progress import compaction_text
from tests.fakes.scripted import ScriptedBackend

from .test_context_and_compaction import LOREM_SUMMARY


def test_compaction_text() -> None:
    assert compaction_text(PrefillProgress(100, 1000)).startswith(
        "Compacting: reading 100 of 1,000 tokens")
    timed = compaction_text(PrefillProgress(500, 1000, tokens_per_s=50.0, eta_s=10.0))
    assert "50 tokens/s" in timed and "about 10 s left" in timed
    assert "writing the summary" in compaction_text(PrefillProgress(1000, 1000))


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
    h.qtbot.waitUntil(lambda: "tokens/s" in h.window.strip_label.text(), timeout=30_000)
    text = h.window.strip_label.text()
    assert text.startswith("Compacting: reading ") and "left" in text
    h.window.grab().save(str(artifacts_dir / "compaction-progress.png"))
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    h.wait_idle()
    assert not h.window.status_strip.isVisible()
    backend.prefill_batch = 0
    h.type_and_send("Hello?")
    h.wait_idle()
    last = h.controller.conversation.messages[-2:]
    assert last[0].content == "Hello?" and last[1].role == "assistant" and last[1].content
