"""Progress that moves (issue 43, item 7): while the model reads a long prompt in slow
batches (a report every 2.5 s), the strip gives a time left from the first report on (the
speed of the last prompt read) and its words change at least every second and a bit."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from PySide6.QtCore import Qt

from tests.fakes.scripted import ScriptedBackend

LONG_PROMPT = "Please summarize these log lines.\n" + "\n".join(
    f"10:{i // 60:02d}:{i % 60:02d} GET /api/items/{i} served in {i % 97} ms" for i in range(200)
)


def test_the_prompt_strip_moves_every_second_between_slow_reports(
    make_window, artifacts_dir: Path
) -> None:
    backend = ScriptedBackend(["Short.", "All served quickly."], prefill_batch=256,
                              delay_per_batch=0.2)
    h = make_window(backend=backend)
    w = h.window
    h.type_and_send("Hello")  # a first prompt read: its speed is known from now on
    h.wait_idle()
    backend.delay_per_batch = 2.5
    w.input.setPlainText(LONG_PROMPT)
    h.qtbot.keyClick(w.input, Qt.Key.Key_Return)
    h.qtbot.waitUntil(w.prompt_progress.isVisible, timeout=10_000)
    first = w.prompt_progress.label.text()
    assert "left" in first and "estimating" not in first, first  # an estimate at once
    texts: list[tuple[float, str]] = []
    end = time.monotonic() + 4.5
    while time.monotonic() < end and w.prompt_progress.isVisible():
        texts.append((time.monotonic(), w.prompt_progress.label.text()))
        h.qtbot.wait(100)
    changes = [t for (_t0, before), (t, text) in itertools.pairwise(texts) if text != before]
    marks = [texts[0][0], *changes, texts[-1][0]]
    longest = max(b - a for a, b in itertools.pairwise(marks))
    assert longest < 1.5, (longest, [text for _t, text in texts])
    last = w.prompt_progress.last
    assert last is not None
    assert any("about" in text for _t, text in texts)  # counted on between reports
    assert w.grab().save(str(artifacts_dir / "prompt-progress-moving.png"))
    h.wait_idle(timeout=120_000)
