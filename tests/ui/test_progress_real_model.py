"""With the real model: a long pasted prompt shows its evaluation progress batch by batch,
and the reply's footer has its time to first token and speed."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from assistant.config import Settings
from assistant.llm.worker import default_factory
from assistant.service.events import PrefillProgress
from assistant.ui.message_widgets import MessageWidget

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Over 1,024 prompt tokens (three batches of 512 at least); a latest message beyond the
# 2,048 the embedded model's history is kept within may use its whole window.
LOG = "\n".join(f"request {i}: served in {i % 50} ms" for i in range(130))


def test_a_long_prompt_shows_progress_then_speed(
    make_window, embedded_model_path: Path
) -> None:
    settings = Settings(model=str(embedded_model_path))
    settings.sampling.max_reply_tokens = 24
    h = make_window(settings=settings, factory=default_factory, wait=False)
    h.wait_ready(timeout=120_000)
    w = h.window
    seen: list[tuple[int, int]] = []
    w.bridge.on(PrefillProgress, lambda e: seen.append((e.done, e.total)))
    w.input.setPlainText("Which request was slowest?\n" + LOG)
    h.qtbot.keyClick(w.input, Qt.Key.Key_Return)
    h.qtbot.waitUntil(lambda: w.prompt_progress.isVisible(), timeout=120_000)
    assert "Reading your prompt:" in w.prompt_progress.label.text()
    h.wait_idle(timeout=600_000)
    assert not w.prompt_progress.isVisible()
    total = seen[-1][1]
    assert total > 1024 and len(seen) >= 3  # batches of 512
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    reply = [e for e in w.chat_view.entries() if isinstance(e, MessageWidget)][-1]
    assert reply.message.role == "assistant"
    assert "s to first token" in reply.footer.text() and "tokens/s" in reply.footer.text()
    assert f"prompt {total:,} tokens" in reply.footer.text()
