"""A message too large for the window is refused before it is sent: with its size and the
room, nothing saved, nothing asked of the model, and the chat goes on."""

from __future__ import annotations

from collections.abc import Callable

from assistant.agent.events import MessageAdded, MessageRefused, TurnFinished
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
    saved = [m.content for m in rig.service.conversation.messages]
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
    assert [m.content for m in rig.service.conversation.messages] == saved
    assert len(backend.calls) == calls
    assert not any(isinstance(e, MessageAdded) and e.message.content == huge
                   for e in rig.events)
    assert rig.of(TurnFinished)[-1].error
    chat_id = rig.service.chat_id
    assert chat_id is not None
    assert "00599 a line" not in rig.service.store.path_of(chat_id).read_text(encoding="utf-8")
    # The chat goes on: a shorter message is answered.
    assert not rig.service.busy and rig.service.status.phase == Phase.IDLE
    assert rig.service.submit("What does line 3 say? 00003 a line of a pasted log")
    assert rig.service.conversation.messages[-1].content == "Line 3 says hello."


def test_a_message_that_fits_is_sent_whole(make_rig: Make) -> None:
    backend = ScriptedBackend(["Seen."], window=4096)
    rig = make_rig(backend=backend)
    text = _lines(120) + "\nWhat does line 3 say?"
    assert rig.service.submit(text)
    assert not rig.of(MessageRefused)
    sent = backend.calls[-1].messages[-1]
    assert sent == {"role": "user", "content": text}
