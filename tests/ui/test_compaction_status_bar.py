"""The status bar during and after a compaction: while the strip above the input says what
happens (summarizing older messages to make room) and how far it is, the status bar does not
repeat it nor say "Compacting"; it says only how to cancel. After the compaction it moves on
with the turn (reading the prompt, writing the reply) and ends on "Ready": the line under the
reply says what happened, and nothing of the compaction stays in the status bar. Cancelling
says so and ends on "Stopped". Screenshots: test-artifacts/compaction-status-bar-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from assistant.service.events import StatusChanged
from assistant.ui.main_window import COMPACTING_STATUS
from assistant.ui.progress_strips import TITLE
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness
from .test_compaction_wait_on_screen import compacting_in_the_next_turn, note, send
from .test_context_and_compaction import LOREM_SUMMARY


def record_status_bar(h: Harness) -> list[str]:
    """Every text the status bar shows from now on (read after the window renders each
    status: its slot was connected first)."""
    shown: list[str] = []

    def heard(_event: StatusChanged) -> None:
        shown.append(h.window.status_label.text())

    h.window.bridge.on(StatusChanged, heard)
    return shown


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_the_status_bar_during_and_after_a_compaction_in_the_turn(
    make_window, artifacts_dir: Path, tmp_path: Path
) -> None:
    h, backend, i = compacting_in_the_next_turn(make_window, tmp_path)
    shown = record_status_bar(h)
    send(h, note(i))
    strip = h.window.status_strip
    h.qtbot.waitUntil(lambda: "tokens/s" in strip.text, timeout=30_000)
    # The strip has the words and the progress; the status bar does not repeat them.
    assert strip.isVisible() and strip.text.startswith(TITLE)
    assert h.window.status_label.text() == COMPACTING_STATUS
    # The strip's words wrap at this width and are shown whole (not cut at the top/bottom).
    label = strip.label
    h.qtbot.wait(50)  # the layout grows the strip one event-loop pass after new words
    words, need, height = label.text(), label.heightForWidth(label.width()), label.height()
    assert "reading" in words and need > label.fontMetrics().height() * 1.5  # two lines
    assert height >= need, (words, height, need)
    assert h.window.grab().save(str(artifacts_dir / "compaction-status-bar-during.png"))
    h.qtbot.waitUntil(lambda: "writing the summary" in strip.text, timeout=30_000)
    assert h.window.status_label.text() == COMPACTING_STATUS
    backend.prefill_batch = 0  # (only between reads: the scripted reading loops on it)
    h.wait_idle(timeout=120_000)
    assert not strip.isVisible()
    # The chat's line under the reply says what happened; the status bar does not repeat
    # it (nor keep anything of the compaction).
    assert h.controller.chat.conversation.compactions
    final = h.window.status_label.text()
    assert final == "Ready"
    h.qtbot.wait(300)  # the chat view renders its messages on demand after the re-render
    assert h.window.grab().save(str(artifacts_dir / "compaction-status-bar-after.png"))
    assert not any("compacting" in text.lower() for text in shown), shown
    assert not any(TITLE.lower() in text.lower() for text in shown), shown
    # After the compaction the turn goes on (the prompt read, the reply written): nothing
    # of the compaction is left in the status bar.
    last = max(n for n, text in enumerate(shown) if text == COMPACTING_STATUS)
    after = shown[last + 1:]
    assert after and after[-1] == final
    assert any(text.startswith(("Reading the prompt", "Writing the reply")) for text in after)
    assert COMPACTING_STATUS not in after


def test_cancelling_a_summary_says_so_and_ends_on_stopped(make_window) -> None:
    backend = ScriptedBackend()
    h = make_window(backend=backend)
    for n in range(5):
        backend.enqueue(f"Answer {n}.")
        h.controller.submit(f"Question {n}: " + "lorem ipsum dolor sit amet " * 120)
        h.wait_idle()
    backend.delay_per_token = 0.1
    backend.enqueue(LOREM_SUMMARY)  # streamed slowly
    shown = record_status_bar(h)
    h.type_and_send("/compact")
    h.qtbot.waitUntil(lambda: h.window.status_strip.isVisible(), timeout=20_000)
    assert h.window.status_label.text() == COMPACTING_STATUS
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    h.wait_idle()
    assert not h.window.status_strip.isVisible()
    assert "Cancelling the summary…" in shown
    assert h.window.status_label.text() == "Stopped"
    assert h.controller.chat.conversation.compactions == []
