"""A message too large for the window is refused before it is sent: with its size and the
room, nothing saved, nothing asked of the model, and the chat goes on."""

from __future__ import annotations

from collections.abc import Callable

from assistant.agent.events import MessageAdded, MessageRefused, TurnFinished
from assistant.compaction.request import CallRequest
from assistant.llm.context_probe import EffectiveContext, EffectiveContextStore, store_key
from assistant.service.status import Phase
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]


def _lines(n: int) -> str:
    return "\n".join(f"{i:05d} a line of a pasted log with some words" for i in range(n))


def test_a_message_too_large_is_refused_before_it_is_sent(make_rig: Make) -> None:
    backend = ScriptedBackend(["Hello back.", "Line 3 says hello."], window=4096)
    rig = make_rig(backend=backend)
    assert rig.service.submit("Hello")
    calls = len(backend.calls)
    saved = [m.content for m in rig.service.chat.conversation.messages]
    huge = _lines(600) + "\nWhat does line 3 say?"
    assert rig.service.submit(huge)  # parsed and sent to the worker, which refuses it
    rig.idle()
    refused = rig.of(MessageRefused)
    assert len(refused) == 1
    got = refused[0]
    assert got.text == huge and got.tokens > got.room > 0
    errors = rig.notices("error")
    assert any(f"{got.tokens:,} tokens" in e and f"room for {got.room:,}" in e for e in errors)
    # Nothing was saved or sent: the chat and its file are as they were.
    assert [m.content for m in rig.service.chat.conversation.messages] == saved
    assert len(backend.calls) == calls
    assert not any(isinstance(e, MessageAdded) and e.message.content == huge
                   for e in rig.events)
    assert rig.of(TurnFinished)[-1].error
    chat_id = rig.service.chat.chat_id
    assert chat_id is not None
    assert "00599 a line" not in rig.service.store.path_of(chat_id).read_text(encoding="utf-8")
    # The chat goes on: a shorter message is answered.
    assert not rig.service.jobs.busy and rig.service.status_machine.status.phase == Phase.IDLE
    assert rig.service.submit("What does line 3 say? 00003 a line of a pasted log")
    assert rig.service.chat.conversation.messages[-1].content == "Line 3 says hello."


def test_a_message_that_fits_is_sent_whole(make_rig: Make) -> None:
    backend = ScriptedBackend(["Seen."], window=4096)
    rig = make_rig(backend=backend)
    text = _lines(120) + "\nWhat does line 3 say?"
    assert rig.service.submit(text)
    assert not rig.of(MessageRefused)
    sent = backend.calls[-1].messages[-1]
    assert sent == {"role": "user", "content": text}


def _entries(rig: Rig) -> str:
    chat_id = rig.service.chat.chat_id
    assert chat_id is not None
    return rig.service.store.path_of(chat_id).read_text(encoding="utf-8")


def test_an_edit_too_large_is_refused_before_anything_is_written(make_rig: Make) -> None:
    backend = ScriptedBackend(["Hello back.", "Line 3 says hello."], window=4096)
    rig = make_rig(backend=backend)
    assert rig.service.submit("Hello")
    user = rig.service.chat.conversation.messages[0]
    calls, saved, file = len(backend.calls), _contents(rig), _entries(rig)
    huge = _lines(600) + "\nWhat does line 3 say?"
    rig.service.edit_message(user.id, huge)
    rig.idle()
    [got] = rig.of(MessageRefused)
    assert got.text == huge and got.replaces == user.id and got.tokens > got.room > 0
    assert any(f"{got.tokens:,} tokens" in e and f"room for {got.room:,}" in e
               for e in rig.notices("error"))
    # Nothing was written or asked: no new branch, the same file, no model call.
    assert _contents(rig) == saved and _entries(rig) == file
    assert len(backend.calls) == calls
    assert rig.service.chat.branch_info(user.id) == (1, 1)
    assert not rig.service.jobs.busy and rig.service.status_machine.status.phase == Phase.IDLE
    # A shorter edit is sent whole and answered on a new branch.
    short = "\n".join(huge.splitlines()[:5]) + "\nWhat does line 3 say?"
    rig.service.edit_message(user.id, short)
    rig.idle()
    assert _contents(rig) == [short, "Line 3 says hello."]
    assert backend.calls[-1].messages[-1] == {"role": "user", "content": short}
    assert rig.service.chat.branch_info(rig.service.chat.conversation.messages[0].id) == (2, 2)


def test_an_edit_that_fits_after_a_long_chat_is_answered(make_rig: Make) -> None:
    """The room is the room beside what comes before the edited message: the first message
    of a chat needs no summary beside it, so an edit of it may be larger than a new message
    at the end of the same chat could be."""
    # The third message overflows the 4,096-token model: the edit's answer is the default
    # reply, whether or not a summary was asked for in between.
    backend = ScriptedBackend(["One.", "Two."], window=4096, default_reply="Edited.")
    rig = make_rig(backend=backend)
    for text in ("First question", _lines(150) + "\nsecond", _lines(150) + "\nthird"):
        assert rig.service.submit(text)
        rig.idle()
    first = rig.service.chat.conversation.messages[0]
    longer = _lines(220) + "\nthe first, longer"
    engine = rig.service.model.engine
    assert engine is not None
    at_end = engine.controller.message_fit(
        CallRequest(rig.service.chat.conversation, rig.service.settings.system_prompt,
                    engine.agent.registry.schemas()),
        longer,
    )
    assert not at_end.fits  # as a new message it would be refused
    rig.service.edit_message(first.id, longer)
    rig.idle()
    assert not rig.of(MessageRefused)
    assert backend.calls[-1].messages[-1] == {"role": "user", "content": longer}
    assert _contents(rig)[-1] == "Edited."


def test_regenerating_a_reply_to_a_message_that_no_longer_fits_is_refused(
    make_rig: Make,
) -> None:
    backend = ScriptedBackend(["Seen.", "Seen again."], window=8192)
    rig = make_rig(backend=backend)
    text = _lines(300) + "\nWhat does line 3 say?"
    assert rig.service.submit(text)
    rig.idle()
    user, reply = rig.service.chat.conversation.messages[:2]
    backend.window = 3072  # a smaller window since (another model, a smaller setting)
    calls, file = len(backend.calls), _entries(rig)
    rig.service.regenerate(reply.id)
    rig.idle()
    [got] = rig.of(MessageRefused)
    assert got.text == text and got.replaces == user.id and got.tokens > got.room > 0
    assert any(e.startswith("Not regenerated") and f"room for {got.room:,}" in e
               for e in rig.notices("error"))
    assert _entries(rig) == file and len(backend.calls) == calls
    assert rig.service.chat.branch_info(reply.id) == (1, 1)
    # With the window back, regenerating works as before.
    backend.window = 8192
    rig.service.regenerate(reply.id)
    rig.idle()
    assert _contents(rig) == [text, "Seen again."]


def _contents(rig: Rig) -> list[str]:
    return [m.content for m in rig.service.chat.conversation.messages]


def test_an_edit_beyond_the_measured_target_is_sent_whole(make_rig: Make) -> None:
    """The model was measured to use 2,048 tokens well: its history is kept within that,
    but an edited message of about 3,600 tokens still fits its 8,192 window and is sent."""
    backend = ScriptedBackend(["Hello back.", "Seen."], window=8192)
    EffectiveContextStore().put(
        store_key(backend.info),
        EffectiveContext(model="scripted", window=8192, effective=2048,
                         accuracy={2048: [5, 6]}, measured="2026-11-26T07:00:00+00:00"),
    )
    rig = make_rig(backend=backend)
    assert rig.service.submit("Hello")
    engine = rig.service.model.engine
    assert engine is not None and engine.controller.policy().window == 2048
    user = rig.service.chat.conversation.messages[0]
    text = _lines(300) + "\nWhat does line 3 say?"
    assert 2048 < backend.count(text) < 8192
    rig.service.edit_message(user.id, text)
    rig.idle()
    assert not rig.of(MessageRefused)
    assert backend.calls[-1].messages[-1] == {"role": "user", "content": text}
    assert rig.service.chat.conversation.messages[-1].content == "Seen."
