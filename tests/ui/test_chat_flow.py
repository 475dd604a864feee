"""Typing, sending, streaming and stopping, through real key presses."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractSlider

from assistant.agent.events import AssistantDelta
from assistant.ui.message_widgets import MessageWidget
from tests.fakes.scripted import ScriptedBackend


def test_type_message_and_see_streamed_reply(make_window) -> None:
    backend = ScriptedBackend(["Hello there, how can I help you today?"], delay_per_token=0.01)
    h = make_window(backend=backend)
    # What the chat shows after each batch of streamed text, recorded as it happens (the whole
    # reply streams in ~0.1 s: a poll for the streaming bubble could miss it).
    shown: list[str] = []
    h.window.bridge.on(AssistantDelta,
        lambda _text: shown.append(h.window.chat_view.streaming_text))
    h.type_and_send("Hi")
    assert h.window.input.toPlainText() == ""
    h.qtbot.waitUntil(lambda: any(m.role == "assistant"
                                  for m in h.controller.chat.conversation.messages), timeout=20_000)
    h.wait_idle()
    assert shown and shown[0], "the reply was never shown while it streamed"
    assert shown[-1] == "Hello there, how can I help you today?"
    widgets = [w for w in h.window.chat_view.entries() if isinstance(w, MessageWidget)]
    assert [w.message.role for w in widgets] == ["user", "assistant"]
    assert widgets[1].message.content == "Hello there, how can I help you today?"
    assert h.window.bridge.flushes >= 1
    # batching: fewer repaints than streamed pieces
    assert h.window.bridge.flushes < 9
    assert backend.calls and backend.calls[0].messages[-1]["content"] == "Hi"


def test_stop_with_escape_mid_reply(make_window) -> None:
    backend = ScriptedBackend([" ".join(["word"] * 400)], delay_per_token=0.02)
    h = make_window(backend=backend)
    h.type_and_send("Write a lot")
    h.qtbot.waitUntil(lambda: len(h.window.chat_view.streaming_text) > 20, timeout=20_000)
    assert h.window.send_button.text() == "Stop"
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    h.wait_idle()
    last = h.controller.chat.conversation.messages[-1]
    assert last.role == "assistant" and last.stopped
    assert len(last.content) < len(" ".join(["word"] * 400))
    assert h.window.send_button.text() == "Send"


def test_enter_sends_and_shift_enter_adds_a_line(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["Two lines received."]))
    inp = h.window.input
    inp.setFocus()
    h.qtbot.keyClicks(inp, "first")
    h.qtbot.keyClick(inp, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    h.qtbot.keyClicks(inp, "second")
    assert inp.toPlainText() == "first\nsecond"
    h.qtbot.keyClick(inp, Qt.Key.Key_Return)
    h.wait_idle()
    assert h.controller.chat.conversation.messages[0].content == "first\nsecond"


def test_enter_sends_can_be_turned_off(make_window) -> None:
    from assistant.config import Settings

    h = make_window(settings=Settings(enter_sends=False))
    inp = h.window.input
    h.qtbot.keyClicks(inp, "a")
    h.qtbot.keyClick(inp, Qt.Key.Key_Return)
    h.qtbot.keyClicks(inp, "b")
    assert inp.toPlainText() == "a\nb"
    assert not h.controller.jobs.busy and h.controller.chat.handle is None
    h.qtbot.keyClick(inp, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    h.wait_idle()
    assert h.controller.chat.conversation.messages[0].content == "a\nb"


def test_stop_button_stops_the_reply(make_window) -> None:
    h = make_window(backend=ScriptedBackend([" ".join(["x"] * 300)], delay_per_token=0.02))
    h.type_and_send("go")
    h.qtbot.waitUntil(lambda: bool(h.window.chat_view.streaming_text), timeout=20_000)
    h.qtbot.mouseClick(h.window.send_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    assert h.controller.chat.conversation.messages[-1].stopped
    assert h.window.status_label.text() == "Stopped"


def test_messages_sent_before_the_model_loaded_are_queued(make_window) -> None:
    import threading

    release = threading.Event()
    backend = ScriptedBackend(["Loaded and answering."])

    def slow_factory(_model: str, _n_ctx: int, _threads: int) -> ScriptedBackend:
        release.wait(10)
        return backend

    h = make_window(backend=backend, factory=slow_factory, wait=False)
    assert h.window.load_progress.isVisible()
    assert "Loading" in h.window.status_label.text()
    h.type_and_send("early question")
    assert h.controller.queue == ["early question"]
    assert "queued" in h.window.queue_label.text()
    assert "model has loaded" in h.window.queue_label.text()
    release.set()
    h.wait_ready()
    h.wait_idle()
    assert [m.content for m in h.controller.chat.conversation.messages] == [
        "early question",
        "Loaded and answering.",
    ]
    assert not h.window.load_progress.isVisible()


def test_messages_typed_during_a_reply_are_queued_and_sent_after(make_window) -> None:
    backend = ScriptedBackend(["one " * 40, "second answer"], delay_per_token=0.01)
    h = make_window(backend=backend)
    h.type_and_send("first")
    h.qtbot.waitUntil(lambda: h.controller.jobs.busy)
    h.type_and_send("second")
    assert h.controller.queue == ["second"]
    h.wait_idle()
    contents = [m.content for m in h.controller.chat.conversation.messages]
    assert contents[2:] == ["second", "second answer"]


def test_copy_buttons_copy_message_and_code(make_window) -> None:
    from PySide6.QtGui import QGuiApplication

    reply = "Try this:\n\n```bash\necho hello\n```\n"
    h = make_window(backend=ScriptedBackend([reply]))
    h.type_and_send("how?")
    h.wait_idle()
    widget = h.window.chat_view.message_widgets[h.controller.chat.conversation.messages[-1].id]
    h.qtbot.mouseClick(widget.copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == reply
    [block] = widget.body.code_blocks()
    assert block.lang_label.text() == "bash"
    h.qtbot.mouseClick(block.copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == "echo hello"
    assert block.copy_button.text() == "Copied"


def test_up_in_empty_input_edits_last_message_as_a_branch(make_window) -> None:
    backend = ScriptedBackend(["Paris.", "Rome."])
    h = make_window(backend=backend)
    h.type_and_send("Capital of France?")
    h.wait_idle()
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Up)
    assert h.window.input.toPlainText() == "Capital of France?"
    assert h.window.edit_banner.isVisible()
    h.window.input.clear()
    h.qtbot.keyClicks(h.window.input, "Capital of Italy?")
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Return)
    h.wait_idle()
    msgs = h.controller.chat.conversation.messages
    assert [m.content for m in msgs] == ["Capital of Italy?", "Rome."]
    user_widget = h.window.chat_view.message_widgets[msgs[0].id]
    assert user_widget.branch_switcher.isVisibleTo(user_widget)
    assert user_widget.branch_switcher.label.text() == "2/2"
    h.qtbot.mouseClick(user_widget.branch_switcher.prev_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    msgs = h.controller.chat.shown_conversation.messages
    assert msgs[0].content == "Capital of France?"
    first = h.window.chat_view.message_widgets[msgs[0].id]
    assert first.branch_switcher.label.text() == "1/2"


def test_escape_leaves_edit_mode(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["ok"]))
    h.type_and_send("hello")
    h.wait_idle()
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Up)
    assert h.window.editing_id is not None
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_Escape)
    assert h.window.editing_id is None and h.window.input.toPlainText() == ""


def test_regenerate_makes_a_second_version(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["First try.", "Second try."]))
    h.type_and_send("Say something")
    h.wait_idle()
    reply = h.controller.chat.conversation.messages[-1]
    widget = h.window.chat_view.message_widgets[reply.id]
    h.qtbot.mouseClick(widget.regenerate_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    new = h.controller.chat.conversation.messages[-1]
    assert new.content == "Second try."
    assert h.window.chat_view.message_widgets[new.id].branch_switcher.label.text() == "2/2"


def test_model_error_during_reply_is_a_distinct_notice(make_window) -> None:
    from assistant.llm.base import LLMError
    from assistant.ui.notices import NoticeWidget

    def boom(_messages: list[dict[str, object]]) -> str:
        raise LLMError("llama_decode returned -1")

    h = make_window(backend=ScriptedBackend([boom]))
    h.type_and_send("hi")
    h.wait_idle()
    notices = [w for w in h.window.chat_view.entries() if isinstance(w, NoticeWidget)]
    assert notices and notices[-1].level == "error"
    assert "llama_decode returned -1" in notices[-1].text
    # the app keeps working
    h.backend.enqueue("Recovered.")
    h.type_and_send("again")
    h.wait_idle()
    assert h.controller.chat.conversation.messages[-1].content == "Recovered."


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_long_chat_renders_newest_page_first(make_window) -> None:
    from assistant.conversation import Message
    from assistant.ui.chat_view import PAGE

    h = make_window()
    handle = h.controller.store.create(title="Long chat")
    for i in range(150):
        handle.conversation.append(Message(role="user", content=f"question {i}"))
        handle.conversation.append(Message(role="assistant", content=f"answer {i}"))
    chat_id = handle.chat_id
    handle.close()
    h.window._refresh_chats()
    h.window.open_chat(chat_id)
    view = h.window.chat_view
    assert len(view.entries()) == PAGE
    assert view.more_button.isVisible()
    assert view.entries()[-1].message.content == "answer 149"  # type: ignore[attr-defined]
    h.qtbot.mouseClick(view.more_button, Qt.MouseButton.LeftButton)
    assert len(view.entries()) == 2 * PAGE
    # scrolling to the top renders the next page by itself
    bar = view.verticalScrollBar()
    h.qtbot.waitUntil(lambda: bar.maximum() > 0)
    bar.triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)
    h.qtbot.waitUntil(lambda: len(view.entries()) == 3 * PAGE)
    while view.more_button.isVisible():
        h.qtbot.mouseClick(view.more_button, Qt.MouseButton.LeftButton)
    assert len(view.entries()) == 300
    assert view.entries()[0].message.content == "question 0"  # type: ignore[attr-defined]


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_duplicate_message_after_rerender_is_not_shown_twice(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["hi"]))
    h.type_and_send("hello")
    h.wait_idle()
    reply = h.controller.chat.conversation.messages[-1]
    view = h.window.chat_view
    count = len(view.entries())
    view.append_delta("hi")
    view.add_message(reply)
    assert len(view.entries()) == count


def test_a_refused_command_stays_in_the_input(make_window) -> None:
    h = make_window()
    h.type_and_send("/frobnicate the widgets")
    assert h.window.input.toPlainText() == "/frobnicate the widgets"
    from assistant.ui.notices import NoticeWidget

    notices = [e for e in h.window.chat_view.entries() if isinstance(e, NoticeWidget)]
    assert "Unknown command /frobnicate" in notices[-1].text
    assert h.controller.chat.chat_id is None and not h.backend.calls
