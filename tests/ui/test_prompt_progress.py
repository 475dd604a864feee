"""While a long prompt is evaluated: a progress bar with tokens done of the total and an
estimate; after the reply, time to first token and tokens per second under it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from assistant.service.events import PrefillProgress
from assistant.service.status import Phase
from assistant.ui.message_widgets import MessageWidget
from assistant.ui.progress_strips import progress_text
from tests.fakes.scripted import ScriptedBackend

LONG_PROMPT = "Please summarize these log lines.\n" + "\n".join(
    f"10:{i // 60:02d}:{i % 60:02d} GET /api/items/{i} served in {i % 97} ms" for i in range(260)
)


def test_a_long_prompt_shows_its_progress_then_the_reply_its_speed(
    make_window, artifacts_dir: Path
) -> None:
    backend = ScriptedBackend(
        ["The requests were all served quickly."],
        prefill_batch=256,
        delay_per_batch=0.25,
        delay_per_token=0.01,
    )
    h = make_window(backend=backend)
    w = h.window
    w.resize(1180, 800)
    seen: list[int] = []
    w.bridge.on(PrefillProgress, lambda e: seen.append(e.done))
    w.input.setPlainText(LONG_PROMPT)
    h.qtbot.keyClick(w.input, Qt.Key.Key_Return)
    h.qtbot.waitUntil(lambda: w.prompt_progress.isVisible(), timeout=10_000)
    assert w.status.phase is Phase.EVALUATING_PROMPT
    h.qtbot.waitUntil(
        lambda: w.prompt_progress.last is not None and w.prompt_progress.last.eta_s is not None,
        timeout=10_000,
    )
    last = w.prompt_progress.last
    assert last is not None and 0 < last.done < last.total
    label = w.prompt_progress.label.text()
    assert f"of {last.total:,} tokens" in label and "left" in label
    assert 0 < w.prompt_progress.bar.value() < 1000
    assert "Reading the prompt" in w.status_label.text()
    h.qtbot.wait(100)
    assert w.grab().save(str(artifacts_dir / "prompt-in-progress.png"))
    h.wait_idle()
    assert not w.prompt_progress.isVisible()
    assert seen == sorted(seen) and len(seen) >= 5  # one report per batch
    reply = [e for e in w.chat_view.entries() if isinstance(e, MessageWidget)][-1]
    assert reply.message.role == "assistant"
    # The reply's figures come with the finished turn's report, which may be shown a
    # moment after the window went idle on a loaded machine.
    h.qtbot.waitUntil(reply.footer.isVisible)
    footer = reply.footer.text()
    assert "s to first token" in footer and "tokens/s" in footer
    assert f"prompt {backend.calls[0].prompt_tokens:,} tokens" in footer


def test_escape_stops_the_prompt_evaluation(make_window) -> None:
    backend = ScriptedBackend(prefill_batch=64, delay_per_batch=0.2)
    h = make_window(backend=backend)
    w = h.window
    w.input.setPlainText(LONG_PROMPT)
    h.qtbot.keyClick(w.input, Qt.Key.Key_Return)
    h.qtbot.waitUntil(lambda: w.prompt_progress.isVisible(), timeout=10_000)
    h.qtbot.keyClick(w.input, Qt.Key.Key_Escape)
    h.wait_idle()
    assert not w.prompt_progress.isVisible()
    assert [m.role for m in h.controller.chat.conversation.messages] == ["user"]
    assert w.status_label.text() == "Stopped"


def test_a_short_prompt_never_flashes_the_strip(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["Hi!"], prefill_batch=512))
    shown: list[bool] = []
    h.window.bridge.on(PrefillProgress,
        lambda _e: shown.append(h.window.prompt_progress.isVisible())
    )
    h.type_and_send("Hello")
    h.wait_idle()
    assert shown and not any(shown)
    assert not h.window.prompt_progress.isVisible()


def test_progress_text() -> None:
    assert progress_text(PrefillProgress(512, 6800)) == (
        "Reading your prompt: 512 of 6,800 tokens · estimating the time left… · Esc to stop"
    )
    assert progress_text(PrefillProgress(1024, 6800, tokens_per_s=128.0, eta_s=45.1)) == (
        "Reading your prompt: 1,024 of 6,800 tokens · 128 tokens/s · about 45 s left"
        " · Esc to stop"
    )
