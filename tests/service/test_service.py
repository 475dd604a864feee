"""The session service without Qt: queue, chats, saving and resuming, model reloads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from assistant.agent.events import ContextChanged, MessageAdded, TurnFinished
from assistant.compaction.branch import BranchSummarizer
from assistant.compaction.events import CompactionFinished
from assistant.config import Settings
from assistant.llm.base import LLMBackend, ModelLoadError
from assistant.service.events import (
    ChatsChanged,
    ConversationReset,
    ModelChanged,
    QueueChanged,
    SettingsChanged,
)
from assistant.service.service import ChatService
from assistant.service.status import Phase
from assistant.sessions.store import SessionStore
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]


def _contents(service: ChatService) -> list[str]:
    return [m.content for m in service.chat.conversation.messages]


def test_a_message_is_answered_and_saved(make_rig: Make) -> None:
    rig = make_rig("Hello back.")
    assert rig.service.submit("Hello")
    assert _contents(rig.service) == ["Hello", "Hello back."]
    chat_id = rig.service.chat.chat_id
    assert chat_id is not None
    saved = rig.service.store.list_chats()
    assert [(c.id, c.message_count, c.title) for c in saved] == [(chat_id, 2, "Hello")]
    assert rig.of(ChatsChanged)
    assert [type(e).__name__ for e in rig.events if isinstance(e, MessageAdded)] == [
        "MessageAdded", "MessageAdded"
    ]


def test_input_before_the_model_loaded_is_queued_in_order(make_rig: Make) -> None:
    rig = make_rig("first answer", "second answer", load=False)
    assert rig.service.submit("one") and rig.service.submit("two")
    assert rig.service.queue == ["one", "two"]
    assert rig.of(QueueChanged)[-1].texts == ("one", "two")
    assert rig.service.chat.chat_id is None  # nothing saved until it is sent
    rig.service.load_model()
    assert _contents(rig.service) == ["one", "first answer", "two", "second answer"]
    assert rig.service.queue == []


def test_input_during_a_reply_is_queued_and_sent_after(make_rig: Make) -> None:
    backend = ScriptedBackend(["word " * 60, "later answer"], delay_per_token=0.005)
    rig = make_rig(backend=backend, threaded=True)
    service = rig.service
    service.submit("first")
    assert service.jobs.busy
    service.submit("second")
    service.submit("/mode standard")  # an app command waits its turn too
    assert service.queue == ["second", "/mode standard"]
    assert service.settings.mode == "local"
    rig.idle()
    assert _contents(service)[2:] == ["second", "later answer"]
    assert service.settings.mode == "standard"
    assert not service.jobs.busy and service.status_machine.status.phase is Phase.IDLE


def test_stop_keeps_the_partial_reply_and_says_stopped(make_rig: Make) -> None:
    backend = ScriptedBackend(["word " * 400], delay_per_token=0.01)
    rig = make_rig(backend=backend, threaded=True)
    service = rig.service
    service.submit("write a lot")
    assert rig.loop is not None
    rig.loop.run_until(lambda: service.status_machine.status.phase is Phase.GENERATING)
    assert service.stop()
    assert service.status_machine.status.phase is Phase.STOPPING
    rig.idle()
    last = service.chat.conversation.messages[-1]
    assert last.role == "assistant" and last.stopped
    status = service.status_machine.status
    assert status.phase is Phase.IDLE and status.text == "Stopped"
    assert not service.stop()  # nothing left to stop


def test_chats_are_not_switched_under_a_running_reply(make_rig: Make) -> None:
    backend = ScriptedBackend(["earlier answer", "word " * 400], delay_per_token=0.01)
    rig = make_rig(backend=backend, threaded=True)
    service = rig.service
    service.submit("an earlier chat")
    rig.idle()
    earlier = service.chat.chat_id
    assert earlier is not None and service.new_chat()
    service.submit("write a lot")
    assert rig.loop is not None
    rig.loop.run_until(lambda: service.status_machine.status.phase is Phase.GENERATING)
    writing = service.chat.chat_id
    assert writing is not None
    assert not service.new_chat()
    assert not service.open_chat(earlier)
    service.delete_chat(writing)
    assert rig.notices("warning") == [
        "Stop the reply (Esc) before starting a new chat.",
        "Stop the reply (Esc) before switching chats.",
        "Stop the reply (Esc) before deleting this chat.",
    ]
    assert service.chat.chat_id == writing  # the reply goes on in the chat it was asked in
    assert service.stop()
    rig.idle()
    assert _contents(service)[0] == "write a lot" and service.chat.conversation.messages[-1].stopped
    assert service.open_chat(earlier)
    assert _contents(service) == ["an earlier chat", "earlier answer"]


def test_saved_chat_is_resumed_by_another_service(make_rig: Make, tmp_path: Path) -> None:
    store_root = tmp_path / "sessions"
    first = make_rig("Noted: teal.", store=SessionStore(store_root))
    first.service.submit("My favourite colour is teal.")
    chat_id = first.service.chat.chat_id
    first.service.shutdown()  # releases the chat's lock
    second = make_rig("It is teal.", store=SessionStore(store_root))
    assert second.service.resume("last")
    assert second.service.chat.chat_id == chat_id
    assert second.of(ConversationReset)[-1].chat_id == chat_id
    second.service.submit("What is my favourite colour?")
    assert _contents(second.service) == [
        "My favourite colour is teal.", "Noted: teal.",
        "What is my favourite colour?", "It is teal.",
    ]
    # The model saw the earlier messages.
    sent = second.backend.calls[-1].messages
    assert [m["content"] for m in sent[1:]] == _contents(second.service)[:3]
    assert SessionStore(store_root).list_chats()[0].message_count == 4


def test_a_chat_open_elsewhere_is_refused_with_a_clear_message(
    make_rig: Make, tmp_path: Path
) -> None:
    root = tmp_path / "sessions"
    first = make_rig("ok", store=SessionStore(root))
    first.service.submit("hello")
    second = make_rig(store=SessionStore(root))
    assert not second.service.resume(str(first.service.chat.chat_id))
    assert second.service.chat.chat_id is None
    assert any("open" in text.lower() for text in second.notices("error"))


def test_resume_by_title_and_unknown_reference(make_rig: Make) -> None:
    rig = make_rig("a", "b")
    rig.service.submit("Trip planning for June")
    trip = rig.service.chat.chat_id
    rig.service.new_chat()
    rig.service.submit("Grocery list")
    assert rig.service.resume("trip")
    assert rig.service.chat.chat_id == trip
    assert not rig.service.resume("no such chat")
    assert rig.notices("error")[-1] == "No chat matches “no such chat”."
    assert rig.service.chat.chat_id == trip


def test_model_reload_only_when_model_threads_or_window_change(make_rig: Make) -> None:
    rig = make_rig()
    service = rig.service
    assert rig.loads == [service.settings.model]
    cooler = service.settings.model_copy(deep=True)
    cooler.sampling.temperature = 0.9
    assert not service.apply_settings(cooler)
    assert service.status_machine.status.text == "Settings saved"
    standard = service.settings.model_copy(update={"mode": "standard"})
    # The scripted model is trained on 8,192 tokens: local and standard both get 8,192.
    assert not service.apply_settings(standard)
    other = service.settings.model_copy(update={"model": "gemma-3-270m"})
    assert service.apply_settings(other)
    assert rig.loads[-1] == "gemma-3-270m"
    assert [e.reloading for e in rig.of(SettingsChanged)] == [False, False, True]
    assert service.ready and service.status_machine.status.phase is Phase.IDLE


def test_a_new_prompt_form_reloads_the_model_and_is_set_before_it_is_used(
    make_rig: Make,
) -> None:
    forms: list[str | None] = []

    class FormBackend(ScriptedBackend):
        def use_prompt_form(self, form: str | None) -> None:
            forms.append(form)

    backend = FormBackend(["ok"])
    rig = make_rig(backend=backend)
    assert forms == [None]  # "auto": the registry's or the file's choice
    base = rig.service.settings.model_copy(deep=True)
    base.performance.prompt_form = "transcript"
    assert rig.service.apply_settings(base)  # counts made in the old form do not hold
    assert len(rig.loads) == 2 and forms[-1] == "transcript"
    assert rig.service.ready


def test_failed_load_keeps_input_and_a_new_model_answers_it(make_rig: Make) -> None:
    good = ScriptedBackend(["Working now."])

    def factory(model: str, _n_ctx: int, _threads: int) -> LLMBackend:
        if model == "broken.gguf":
            raise ModelLoadError(model, "not a GGUF file")
        return good

    rig = make_rig(factory=factory, settings=Settings(model="broken.gguf"))
    service = rig.service
    assert service.model.state == "failed"
    assert service.status_machine.status.phase is Phase.FAILED
    assert "not a GGUF file" in service.status_machine.status.text
    assert rig.of(ModelChanged)[-1].error
    service.submit("hello?")
    assert service.queue == ["hello?"]
    service.submit("/help")  # app commands work without a model
    assert "/compact" in rig.notices("info")[-1]
    assert service.status_machine.status.phase is Phase.FAILED  # still tells the truth
    service.apply_settings(service.settings.model_copy(update={"model": "fine"}))
    assert _contents(service) == ["hello?", "Working now."]
    assert service.status_machine.status.phase is Phase.IDLE


def test_compact_runs_directly_with_its_focus(make_rig: Make) -> None:
    rig = make_rig()
    service = rig.service
    for i in range(6):
        rig.backend.enqueue(f"Answer {i}.")
        service.submit(f"Question {i}: " + "lorem ipsum dolor sit amet " * 120)
    service.compact("the numbers")
    record = service.chat.conversation.compactions[-1]
    assert record.reason == "manual" and record.focus == "the numbers"
    assert any(
        isinstance(e, ContextChanged) and isinstance(e.event, CompactionFinished)
        for e in rig.events
    )
    # The chat shows the divider; the status bar keeps no note of it (nothing stale).
    assert service.status_machine.status.text == "Ready"
    assert rig.of(TurnFinished)[-1] == TurnFinished()


def test_compact_with_no_chat_creates_nothing(make_rig: Make) -> None:
    rig = make_rig()
    rig.service.submit("/compact")
    assert rig.notices("info") == ["Nothing to compact yet."]
    assert rig.service.store.list_chats() == []


def test_branches_edit_and_regenerate(make_rig: Make) -> None:
    rig = make_rig("first reply", "edited reply", "regenerated reply")
    service = rig.service
    service.submit("original question")
    user = service.chat.conversation.messages[0]
    service.edit_message(user.id, "edited question")
    assert _contents(service) == ["edited question", "edited reply"]
    assert service.chat.branch_info(service.chat.conversation.messages[0].id) == (2, 2)
    service.regenerate(service.chat.conversation.messages[1].id)
    assert _contents(service) == ["edited question", "regenerated reply"]
    service.switch_branch(service.chat.conversation.messages[0].id, -1)
    shown = [m.content for m in service.chat.shown_conversation.messages]
    assert shown[:2] == ["original question", "first reply"]
    assert _contents(service) == ["edited question", "regenerated reply"]  # only looking
    assert rig.of(ConversationReset)
    # Continuing there leaves the edited branch, summarized with the loaded model's tokenizer.
    service.submit("continue on the first branch")
    handle = service.chat.handle
    assert handle is not None
    summary = next(m for m in service.chat.conversation.messages if handle.is_branch_summary(m.id))
    assert "edited question" in summary.content
    assert _contents(service)[:2] == ["original question", "first reply"]
    engine = service.model.engine
    assert engine is not None
    assert isinstance(service.store.summarizer, BranchSummarizer)
    assert service.store.summarizer.counter is engine.controller.counter


def test_delete_and_undo_and_rename(make_rig: Make) -> None:
    rig = make_rig("ok")
    service = rig.service
    service.submit("keep me")
    chat_id = service.chat.chat_id
    assert chat_id is not None
    service.chat.rename(chat_id, "Renamed")
    assert service.chat.summaries()[0].title == "Renamed"
    service.delete_chat(chat_id)
    assert service.chat.chat_id is None and service.chat.summaries() == []
    assert service.undo_delete() == chat_id
    assert service.status_machine.status.text == "Chat restored"
    assert [c.id for c in service.chat.summaries()] == [chat_id]


def test_worker_completions_run_on_the_owner_thread(make_rig: Make) -> None:
    seen: list[int] = []
    rig = make_rig("ok", threaded=True)
    original = rig.service._drain_queue

    def spy() -> None:
        seen.append(threading.get_ident())
        original()

    rig.service._drain_queue = spy  # type: ignore[method-assign]
    rig.service.submit("hi")
    rig.idle()
    assert rig.loop is not None and seen and set(seen) == {rig.loop.owner}


def test_a_dropped_file_is_copied_into_the_workspace_and_read(
    make_rig: Make, tmp_path: Path
) -> None:
    rig = make_rig()
    outside = tmp_path / "elsewhere" / "letter.txt"
    outside.parent.mkdir()
    outside.write_text("Dear team, the venue is booked.\n")
    rig.service.drop_file(outside)
    messages = rig.service.chat.conversation.messages
    assert [m.role for m in messages] == ["assistant", "tool"]
    assert "the venue is booked" in messages[1].content
    assert (rig.service.settings.workspace_path() / "dropped" / "letter.txt").is_file()
    assert any("Copied letter.txt" in text for text in rig.notices("info"))
    assert not rig.backend.calls  # the user asks about it next
