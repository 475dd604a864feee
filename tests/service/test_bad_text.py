"""A chat that already holds lone surrogates (written before issue 47: from invalid standard
input, a Latin-1 file name, an emoji split across two server events) opens, compacts,
recalls and resumes like any other."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from assistant.agent.events import Notice, TurnFinished
from assistant.config import Settings
from assistant.conversation import Message
from assistant.sessions.store import SessionStore
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]
ODD = ("\ud83d", "\udce9", "\ude00x", "\udfff")


def _write_odd_chat(store: SessionStore) -> str:
    """A chat file as the app wrote it before: lone surrogates in user messages, replies
    and a tool output (the file's JSON spells them as ``\\udXXX``)."""
    with store.create(title="odd \ud83d") as chat:
        conv = chat.conversation
        for i in range(30):
            odd = ODD[i % len(ODD)]
            conv.append(Message(role="user", content=f"Note {i}: pump code {1000 + i} {odd} ok. "
                                + "filler words about nothing much " * 20))
            conv.append(Message(role="assistant", content=f"Noted {i} {odd}."))
        return chat.chat_id


def test_a_chat_holding_lone_surrogates_opens_compacts_recalls_and_resumes(
    make_rig: Make, tmp_path: Path
) -> None:
    store = SessionStore()
    chat_id = _write_odd_chat(store)
    store.close_all()
    assert b"\\ud83d" in store.path_of(chat_id).read_bytes()
    settings = Settings(workspace=str(tmp_path / "workspace"))
    settings.compaction.recall = True
    # No reply scripted: the summary is what the summary's grammar allows, the answer "OK.".
    rig = make_rig(backend=ScriptedBackend(window=4096), settings=settings)
    assert rig.service.resume(chat_id)
    rig.service.submit("/compact")
    handle = rig.service.chat.handle
    assert handle is not None
    assert len(handle.conversation.compactions) == 1, rig.notices()
    rig.service.submit("What is the pump code of note 3?")
    asked = rig.backend.calls[-1].messages[-1]["content"]
    assert "pump code 1003" in asked  # recalled beside the question
    asked.encode("utf-8")  # what the model is given always encodes
    assert not [n for n in rig.notices("error")], rig.notices()
    assert all(e.error is None for e in rig.of(TurnFinished))
    count = len(handle.conversation.messages)
    rig.service.shutdown()

    again = make_rig(backend=ScriptedBackend(["Yes."]), settings=settings)
    assert again.service.resume(chat_id)
    resumed = again.service.chat.handle
    assert resumed is not None
    assert len(resumed.conversation.messages) == count
    assert len(resumed.conversation.compactions) == 1
    assert again.service.submit("Thanks, and note 5?")
    assert not [n.text for n in again.of(Notice) if n.level == "error"]
