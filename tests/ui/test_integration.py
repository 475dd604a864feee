"""The real window with the real embedded model: type a question, see a streamed answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.llm.registry import load_registry
from assistant.llm.worker import default_factory
from assistant.ui.message_widgets import MessageWidget


@pytest.mark.integration
@pytest.mark.slow
def test_real_model_streams_an_answer(make_window, embedded_model_path: Path) -> None:
    settings = Settings(model=str(embedded_model_path))
    h = make_window(settings=settings, factory=default_factory, wait=False)
    assert h.window.load_progress.isVisible()
    h.wait_ready(timeout=120_000)
    assert h.window.model_label.text().endswith("8,192 ctx")
    h.type_and_send("What is the capital of France? Answer in one sentence.")
    h.qtbot.waitUntil(lambda: bool(h.window.chat_view.streaming_text.strip()), timeout=120_000)
    h.wait_idle(timeout=240_000)
    msgs = h.controller.chat.conversation.messages
    assert [m.role for m in msgs] == ["user", "assistant"]
    answer = msgs[-1].content
    assert answer.strip()
    widget = h.window.chat_view.message_widgets[msgs[-1].id]
    assert isinstance(widget, MessageWidget) and widget.body.markdown == answer
    # The bar is the 8,192 window the model was loaded with (the hard limit), marked at the
    # size the history is kept within: its measured effective context (models/registry.json).
    entry = load_registry().by_file(embedded_model_path.name)
    kept_within = min(8192, entry.effective_context or 8192) if entry is not None else 8192
    usage = h.window.context_bar.usage
    assert usage is not None and usage.window == 8192 and usage.prompt_tokens > 20
    assert usage.target == kept_within
    assert h.window.context_bar.target_mark() == (
        kept_within / 8192 if kept_within < 8192 else None
    )
