"""A restart that continues the chat as it was (issue 43): what the context controller held
for the chat (the focus anchor, the last prompt sent, the summaries written ahead) is saved
with it when it closes and given back when it opens, so the first prompt after a relaunch is
the one the saved model state holds and no compaction runs that would not have run before
quitting. Scripted backend; ``bench.restart`` is the same scenario the benchmark measures."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import pytest

from assistant.compaction import carry
from assistant.config import Settings
from assistant.sessions.store import SessionStore
from bench.prefill import _filler_turn
from bench.restart import QUESTION, restart_figures
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]


def _backend() -> ScriptedBackend:
    return ScriptedBackend([], window=2048, trained_context=2048)


def _near_the_threshold(make_rig: Make, turns: int = 7) -> tuple[Rig, str]:
    """A chat of pasted notes past the point where the next summary is written ahead."""
    rig = make_rig(backend=_backend())
    rig.service.compact_ahead = True  # as the window does
    for i in range(turns):
        assert rig.service.submit(_filler_turn(i, 120))
    chat_id = rig.service.chat.chat_id
    assert chat_id is not None
    return rig, chat_id


@pytest.mark.parametrize("fill", [0.6, 0.95])
def test_the_question_after_a_restart_sends_the_prompt_sent_before_quitting(
    fill: float,
) -> None:
    # At 0.95 the question carries a pasted list that takes the prompt past the threshold
    # (the window's room is 95% full: the next message decides the compaction).
    question = QUESTION if fill < 0.9 else (
        QUESTION + " Here is what I pasted: " + " ".join(f"item {i} is fine;" for i in range(40)))
    got = restart_figures(lambda _m, _n, _t: _backend(), Settings(), fill=fill, question=question)
    before, after = got["before"], got["after"]
    assert got["same_prompt"]
    assert after["compacted"] == before["compacted"]
    assert (after["evaluated"], after["reused"]) == (before["evaluated"], before["reused"])
    assert got["restored_tokens"] > 0
    if fill > 0.9:  # the question compacts, before quitting and after: with the same summary
        assert before["compacted"]


def test_a_reopened_chat_has_what_the_controller_held_before_quitting(make_rig: Make) -> None:
    rig, chat_id = _near_the_threshold(make_rig)
    engine = rig.service.model.engine
    assert engine is not None
    conv = rig.service.chat.conversation
    held = engine.controller.carry_out(conv)
    assert held.ahead and held.sent is not None  # a summary was written ahead
    rig.service.shutdown()
    settings = SessionStore().open(chat_id)
    try:
        assert settings.settings[carry.SETTING] == json.loads(json.dumps(carry.to_json(held)))
    finally:
        settings.close()
    again = make_rig(backend=_backend())
    assert again.service.open_chat(chat_id)
    reopened = again.service.model.engine
    assert reopened is not None
    assert reopened.controller.carry_out(again.service.chat.conversation) == held
    # The first question: the summary written before quitting is the one a compaction takes.
    assert again.service.submit(QUESTION)


def test_a_damaged_saved_state_is_ignored_and_the_chat_reads_whole(
    make_rig: Make, caplog: pytest.LogCaptureFixture
) -> None:
    rig, chat_id = _near_the_threshold(make_rig, turns=3)
    texts = [m.content for m in rig.service.chat.conversation.messages]
    rig.service.shutdown()
    with SessionStore().open(chat_id) as handle:
        handle.record_setting(carry.SETTING, {"version": carry.VERSION, "anchor": "x"})
    again = make_rig(backend=_backend())
    with caplog.at_level(logging.WARNING, logger="assistant.service.resume"):
        assert again.service.open_chat(chat_id)
    assert "saved context state was ignored (the focus anchor" in caplog.text
    assert [m.content for m in again.service.chat.conversation.messages] == texts
    assert again.service.submit("And the next note?")
    assert again.service.chat.conversation.messages[-1].role == "assistant"


def test_a_chat_saved_before_this_state_existed_opens_as_before(
    make_rig: Make, caplog: pytest.LogCaptureFixture
) -> None:
    rig, chat_id = _near_the_threshold(make_rig, turns=3)
    rig.service.shutdown()
    path = SessionStore().path_of(chat_id)
    lines = path.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[-1]).get("name") == carry.SETTING  # written last, on closing
    path.write_bytes(b"".join(lines[:-1]))  # as an older version left it
    again = make_rig(backend=_backend())
    with caplog.at_level(logging.WARNING):
        assert again.service.open_chat(chat_id)
        assert again.service.submit("And the next note?")
    assert "context state" not in caplog.text
    assert len(again.service.chat.conversation.messages) == 8


def test_closing_a_chat_unchanged_writes_nothing(make_rig: Make) -> None:
    rig, chat_id = _near_the_threshold(make_rig, turns=2)
    rig.service.shutdown()
    path = SessionStore().path_of(chat_id)
    size = path.stat().st_size
    again = make_rig(backend=_backend())
    assert again.service.open_chat(chat_id)
    assert again.service.new_chat()  # closes it: nothing was asked, nothing changed
    assert path.stat().st_size == size
