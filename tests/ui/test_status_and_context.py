"""The status bar tells the truth at every moment (sampled while replies, regenerations and
tool calls run), Edit is visibly disabled while a reply stops, and the context bar is filled
as soon as a chat is shown, created or its branch switched."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import Qt, QTimer

from assistant.config import Settings
from assistant.ui.message_widgets import MessageWidget
from tests.fakes.scripted import ScriptedBackend

WRITING = "Writing the reply… (Esc to stop)"


@contextmanager
def sampled(h) -> Iterator[list[tuple[str, bool, bool, bool]]]:  # type: ignore[no-untyped-def]
    """(status text, busy, a reply is streaming, a tool card is running), every 5 ms."""
    samples: list[tuple[str, bool, bool, bool]] = []
    w = h.window

    def sample() -> None:
        running = any(card.result is None for card in w.chat_view.cards.values())
        streaming = w.chat_view.streaming is not None and bool(w.chat_view.streaming_text)
        samples.append((w.status_label.text(), h.controller.jobs.busy, streaming, running))

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(sample)
    timer.start()
    try:
        yield samples
    finally:
        timer.stop()


def _check(samples: list[tuple[str, bool, bool, bool]]) -> None:
    assert samples
    for text, busy, streaming, running in samples:
        if busy:
            assert text != "Ready" and not text.startswith("Model ready"), samples
            assert text != "Stopped", samples
        if busy and streaming and not running:
            assert text in (WRITING, "Stopping…"), samples
        if running:
            assert text.startswith("Running "), samples


def test_the_first_reply_is_never_shown_as_ready(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["One two three four five six."], delay_per_token=0.03))
    with sampled(h) as samples:
        h.type_and_send("Count to six")
        h.wait_idle()
    _check(samples)
    assert any(text == WRITING for text, *_ in samples)
    assert h.window.status_label.text() == "Ready"


def test_a_regeneration_after_a_stop_is_not_shown_as_stopped(make_window) -> None:
    h = make_window(
        backend=ScriptedBackend([" ".join(["word"] * 200), "A calm second answer."],
                                delay_per_token=0.02)
    )
    h.type_and_send("Say many words")
    h.qtbot.waitUntil(lambda: len(h.window.chat_view.streaming_text) > 10, timeout=10_000)
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    h.wait_idle()
    assert h.window.status_label.text() == "Stopped"
    reply = h.window.chat_view.message_widgets[h.controller.chat.conversation.messages[-1].id]
    with sampled(h) as samples:
        h.qtbot.mouseClick(reply.regenerate_button, Qt.MouseButton.LeftButton)
        h.wait_idle()
    _check(samples)
    assert any(busy for _t, busy, *_ in samples)
    assert h.controller.chat.conversation.messages[-1].content == "A calm second answer."


def test_the_model_writing_after_a_tool_is_not_shown_as_the_tool(
    make_window, tmp_path: Path
) -> None:
    _tool_then_reply(make_window, tmp_path)


def test_a_tool_card_shown_before_the_tool_starts_is_not_under_writing(
    make_window, tmp_path: Path, monkeypatch
) -> None:
    """On a loaded machine the reply asking for the tool shows its card a moment before
    the tool starts (seen in CI): that moment, made long here, reads as the tool's."""
    import assistant.agent.loop as loop

    slow = loop.Workspace

    def opened_slowly(root: Path) -> loop.Workspace:
        time.sleep(0.3)
        return slow(root)

    monkeypatch.setattr(loop, "Workspace", opened_slowly)
    _tool_then_reply(make_window, tmp_path)


def _tool_then_reply(make_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("Meeting at noon.\n", encoding="utf-8")
    call = '<tool_call>{"name": "read_file", "arguments": {"path": "notes.txt"}}</tool_call>'
    h = make_window(
        backend=ScriptedBackend([call, "The meeting is at noon, as your notes say."],
                                delay_per_token=0.03),
        settings=Settings(workspace=str(ws)),
    )
    with sampled(h) as samples:
        h.type_and_send("When is the meeting? Read notes.txt")
        h.wait_idle()
    _check(samples)
    writing_after_tool = [t for t, busy, streaming, _r in samples if busy and streaming]
    assert writing_after_tool and all(t == WRITING for t in writing_after_tool)
    assert h.controller.chat.conversation.messages[-1].content.startswith("The meeting is at noon")


def test_edit_is_visibly_disabled_while_a_reply_stops(make_window) -> None:
    backend = ScriptedBackend(["First answer.", "never written"], prefill_batch=8)
    h = make_window(backend=backend)
    h.type_and_send("First question")
    h.wait_idle()
    # Only the second prompt is slow to evaluate: Esc lands inside its prefill.
    backend.delay_per_batch = 0.4
    user = h.window.chat_view.message_widgets[h.controller.chat.conversation.messages[0].id]
    enabled_look = user.edit_button.grab().toImage()
    h.type_and_send("Second question, a long one " * 20)
    h.qtbot.waitUntil(lambda: h.window.prompt_progress.last is not None, timeout=10_000)
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    assert h.window.status_label.text() == "Stopping…"
    assert not user.edit_button.isEnabled()
    assert user.edit_button.grab().toImage() != enabled_look  # it looks disabled too
    h.qtbot.mouseClick(user.edit_button, Qt.MouseButton.LeftButton)
    assert h.window.editing_id is None and not h.window.edit_banner.isVisible()
    h.wait_idle()
    assert user.edit_button.isEnabled()


def _bar(h) -> int:  # type: ignore[no-untyped-def]
    usage = h.window.context_bar.usage
    assert usage is not None, "the context bar is empty"
    return int(usage.prompt_tokens)


def test_the_context_bar_is_filled_for_new_opened_and_switched_chats(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["Paris is the capital of France.", "Rome."]))
    w = h.window
    h.qtbot.waitUntil(lambda: w.context_bar.usage is not None)
    empty = _bar(h)
    assert "/ 8,192" in w.context_bar.label.text()
    h.type_and_send("Capital of France?")
    h.wait_idle()
    first_chat = h.controller.chat.chat_id
    # After the reply the bar counts it too (the prompt sent did not have it).
    h.qtbot.waitUntil(lambda: _bar(h) > h.backend.calls[-1].prompt_tokens)
    long_chat = _bar(h)
    assert long_chat > empty
    h.qtbot.mouseClick(w.sidebar.new_button, Qt.MouseButton.LeftButton)
    h.qtbot.waitUntil(lambda: w.context_bar.usage is not None and _bar(h) == empty)
    assert first_chat is not None
    w.open_chat(first_chat)
    h.qtbot.waitUntil(lambda: w.context_bar.usage is not None and _bar(h) == long_chat)
    # A second version of the question: the bar follows the branch shown.
    user = w.chat_view.message_widgets[h.controller.chat.conversation.messages[0].id]
    h.qtbot.mouseClick(user.edit_button, Qt.MouseButton.LeftButton)
    w.input.clear()
    h.qtbot.keyClicks(w.input, "Capital of Italy?")
    h.qtbot.keyClick(w.input, Qt.Key.Key_Return)
    h.wait_idle()
    h.qtbot.waitUntil(lambda: _bar(h) > h.backend.calls[-1].prompt_tokens)
    italy = _bar(h)
    assert italy != long_chat
    first = w.chat_view.message_widgets[h.controller.chat.conversation.messages[0].id]
    h.qtbot.mouseClick(first.branch_switcher.prev_button, Qt.MouseButton.LeftButton)
    h.qtbot.waitUntil(lambda: _bar(h) == long_chat)
    assert "Viewing another branch" in w.status_label.text()
    shown = [e.message.content for e in w.chat_view.entries() if isinstance(e, MessageWidget)]
    assert shown == ["Capital of France?", "Paris is the capital of France."]
    # Looking did not move the chat.
    assert h.controller.chat.conversation.messages[0].content == "Capital of Italy?"
