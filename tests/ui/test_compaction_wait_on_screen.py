"""The compaction wait as the user sees it: a chat that reaches its window compacts inside
the turn of the message just sent. While it runs the strip says what happens in plain words
(summarizing older messages to make room), then how far the reading is (tokens, speed,
time left), then that the summary is being written (and for how long, ticking); after it,
the strip is gone, every message is still on screen with the divider at the cut, and the
message just sent is in view, below the divider. Screenshots of each step go to
test-artifacts/ (compaction-wait-*.png).

The scripted model makes it fast and exact. (The same with the real model, SmolLM2 at a
1,536-token window, compacted in a few turns but passed pytest's 600 s limit at load 15:
not kept as a test yet.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from assistant.compaction.request import CallRequest
from assistant.config import Settings
from assistant.ui.message_widgets import MessageWidget
from assistant.ui.notices import CompactionLine, CompactionNotice
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness

SUMMARY = "\n\n".join([  # short bullets: the summary gives way beside the latest message
    "## Goal\n- Find which host logged each code",
    "## Constraints & Preferences\n- Answer from the pasted notes",
    "## Progress\n### Done\n- Answered the host of each code asked\n### In Progress\n"
    "- Answer the question on the new note\n### Blocked\n- none",
    "## Key Decisions\n- Read hosts from the note lines",
    "## Next Steps\n- Answer the next note question",
    "## Critical Context\n- Each note lists steps hosts codes",
])


def _model(msgs: list[dict[str, Any]]) -> str:
    last = str(msgs[-1].get("content") or "").lower()
    return SUMMARY if "summar" in last else "Host web-1."


def note(i: int) -> str:
    """A pasted note of about 250 tokens and a question (as in bench/compaction_wait)."""
    lines = [f"Note {i} about the cache:"]
    lines += [f"- item {i}.{j}: step {j} takes {(i * 7 + j * 3) % 40 + 5} ms on host "
              f"web-{(i + j) % 5} and logs code E{100 + i * 10 + j}." for j in range(9)]
    lines.append(f"Which host logged code E{100 + i * 10 + 4}?")
    return "\n".join(lines)


def send(h: Harness, text: str) -> None:
    """Paste ``text`` into the input box and press Enter."""
    h.window.input.setFocus()
    h.window.input.setPlainText(text)
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Return)


def shown_messages(h: Harness) -> list[str]:
    return [e.message.content for e in h.window.chat_view.entries()
            if isinstance(e, MessageWidget)]


def in_view(widget: MessageWidget) -> bool:
    """Whether ``widget`` is laid out and its last line is inside the chat view's visible
    area (clipped by the scroll area, as the user sees it)."""
    if widget.height() < 30:
        return False  # not laid out yet
    visible = widget.visibleRegion().boundingRect()
    return not visible.isEmpty() and visible.bottom() >= widget.height() - 12


def check_after(h: Harness, sent: str, artifacts_dir: Path, name: str) -> None:
    """What the screen shows once the compaction and the answer are done."""
    assert not h.window.status_strip.isVisible()
    conv = h.controller.chat.conversation
    assert conv.compactions, "the chat did not compact"
    assert shown_messages(h) == [m.content for m in conv.messages if m.role != "system"]
    entries = h.window.chat_view.entries()
    [divider] = [e for e in entries if isinstance(e, CompactionNotice)]
    just_sent = next(e for e in entries if isinstance(e, MessageWidget)
                     and e.message.content == sent)
    first = next(e for e in entries if isinstance(e, MessageWidget))
    assert entries.index(first) < entries.index(divider) < entries.index(just_sent)
    assert divider.header.text().endswith("The model now sees a summary of everything above")
    h.qtbot.waitUntil(lambda: in_view(just_sent), timeout=5_000)
    # Under it, a line says what happened and leads to the divider (out of view now).
    [line] = [e for e in entries if isinstance(e, CompactionLine)]
    assert entries.index(just_sent) < entries.index(line)
    assert "summarized to make room" in line.label.text()
    assert "stay in the chat" in line.label.text()
    assert h.window.grab().save(str(artifacts_dir / f"{name}-after.png"))
    h.qtbot.mouseClick(line.show_button, Qt.MouseButton.LeftButton)
    assert divider.details.isVisibleTo(divider)
    assert divider.summary_view.text() == conv.compactions[-1].summary
    h.qtbot.waitUntil(lambda: not divider.header.visibleRegion().isEmpty(), timeout=5_000)
    h.qtbot.wait(100)
    assert h.window.grab().save(str(artifacts_dir / f"{name}-summary-open.png"))


def fill_until_next_compacts(h: Harness, backend: ScriptedBackend, settings: Settings) -> int:
    """Send notes while the next one still fits; the index of the note that will compact."""
    engine = h.controller.model.engine
    assert engine is not None
    pol = engine.controller.policy()

    def next_fits(i: int) -> bool:
        prompt = engine.controller.measure(CallRequest(
            h.controller.chat.conversation, settings.system_prompt, engine.agent.registry.schemas()
        )).prompt_tokens
        return prompt + backend.count(note(i)) + 20 + pol.reserve <= pol.window

    i = 0
    while next_fits(i):
        send(h, note(i))
        h.wait_idle()
        i += 1
        assert i < 20
    assert not h.controller.chat.conversation.compactions
    return i


def compacting_in_the_next_turn(
    make_window: Callable[..., Harness], tmp_path: Path
) -> tuple[Harness, ScriptedBackend, int]:
    """A window whose next note compacts inside the turn (no summary written ahead), with
    nothing cached and a paced backend, so the reading and the writing can be watched; the
    harness, its backend and the index of the note that will compact."""
    backend = ScriptedBackend([_model] * 40, window=4000, trained_context=4000)
    settings = Settings(workspace=str(tmp_path / "ws"))
    settings.compaction.compact_ahead = False  # the wait is inside the turn
    h = make_window(backend=backend, settings=settings)
    h.window.resize(1000, 700)
    i = fill_until_next_compacts(h, backend, settings)
    backend.reset_kv_cache()  # nothing cached: the summary's whole prompt is read
    backend.prefill_batch, backend.delay_per_batch = 64, 0.06
    backend.delay_per_token = 0.03
    return h, backend, i


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_a_compaction_inside_the_turn_as_the_user_sees_it(
    make_window, artifacts_dir: Path, tmp_path: Path
) -> None:
    h, backend, i = compacting_in_the_next_turn(make_window, tmp_path)
    sent = note(i)
    send(h, sent)
    strip = h.window.status_strip
    h.qtbot.waitUntil(lambda: "tokens/s" in strip.text, timeout=30_000)
    reading = strip.text
    assert reading.startswith("Summarizing older messages to make room: reading ")
    assert "left" in reading
    assert strip.bar.maximum() == 1000 and 0 < strip.bar.value() < 1000
    assert "summary" in strip.toolTip() and "on screen" in strip.toolTip()
    # The message just sent is on screen while the older ones are summarized.
    assert shown_messages(h)[-1] == sent
    assert h.window.grab().save(str(artifacts_dir / "compaction-wait-reading.png"))
    h.qtbot.waitUntil(lambda: "writing the summary" in strip.text, timeout=30_000)
    assert strip.bar.maximum() == 0  # busy: how long a summary takes is not known ahead
    h.qtbot.waitUntil(lambda: "so far" in strip.text, timeout=30_000)
    assert h.window.grab().save(str(artifacts_dir / "compaction-wait-writing.png"))
    backend.prefill_batch = 0
    h.wait_idle()
    check_after(h, sent, artifacts_dir, "compaction-wait")
