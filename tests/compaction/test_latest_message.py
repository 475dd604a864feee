"""The user's latest message is never cut: compaction makes room for it whole (line breaks
kept), and one that cannot fit beside the smallest summary is refused before it is sent."""

from __future__ import annotations

from assistant.compaction.budget import minimal_summary
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.user_record import LAST_REQUEST_HEADING
from assistant.config import default_local
from assistant.conversation import Conversation, Message
from tests.fakes.scripted import ScriptedBackend

from .helpers import (
    GOOD_SUMMARY,
    SYSTEM,
    controller,
    local_policy,
    long_message,
    tool_turn,
    writes,
)

WINDOW = 8192


def _policy():  # type: ignore[no-untyped-def]
    return default_local().effective("local", WINDOW)



def _history(conv: Conversation, turns: int) -> None:
    for i in range(turns):
        tool_turn(conv, i, size=40)


def test_a_long_latest_message_goes_to_the_model_whole() -> None:
    backend = ScriptedBackend([writes(GOOD_SUMMARY)] * 4, window=WINDOW)
    ctl, _, _ = controller(backend, _policy())
    conv = Conversation()
    _history(conv, 12)
    text = long_message(backend, 4_400)
    assert backend.count(text) >= 4_400 and text.count("\n") > 150
    fit = ctl.message_fit(CallRequest(conv, SYSTEM), text)
    assert fit.fits, fit
    conv.append(Message(role="user", content=text))
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.compaction is not None  # the history had to give way
    # The message is the last one the model sees, byte for byte (every line break kept).
    assert req.messages[-1] == {"role": "user", "content": text}
    summary = req.messages[1]["content"]
    assert LAST_REQUEST_HEADING not in summary and "[…]" not in summary
    assert req.prompt_tokens + _policy().reserve <= WINDOW


def test_the_summary_gives_way_for_a_message_that_just_fits() -> None:
    backend = ScriptedBackend([writes(GOOD_SUMMARY)] * 4, window=WINDOW)
    ctl, _, _ = controller(backend, _policy())
    conv = Conversation()
    _history(conv, 12)
    room = ctl.message_fit(CallRequest(conv, SYSTEM), "x").room
    text = long_message(backend, room - 40)
    fit = ctl.message_fit(CallRequest(conv, SYSTEM), text)
    assert fit.fits and fit.room - fit.tokens < 80
    conv.append(Message(role="user", content=text))
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.messages[-1]["content"] == text
    assert req.prompt_tokens + _policy().reserve <= WINDOW
    # Only the smallest summary stands before it: a short record (the files read, where
    # the user's earlier messages went).
    assert len(req.messages) == 3
    assert "src/file_0.py" in req.messages[1]["content"]
    assert "messages 1-12 omitted" in req.messages[1]["content"]


def test_a_message_larger_than_the_room_is_refused_with_its_size_and_the_room() -> None:
    backend = ScriptedBackend([], window=WINDOW)
    ctl, _, _ = controller(backend, _policy())
    conv = Conversation()
    _history(conv, 2)
    pol = _policy()
    room = WINDOW - pol.reserve - ctl.overhead(SYSTEM, None) - minimal_summary(
        pol, backend.count
    )
    text = long_message(backend, room + 10)
    fit = ctl.message_fit(CallRequest(conv, SYSTEM), text)
    assert not fit.fits and fit.room == room and fit.tokens > room
    refusal = fit.refusal()
    assert f"{fit.tokens:,} tokens" in refusal and f"room for {room:,}" in refusal
    # A first message needs no summary beside it: its room is larger.
    assert ctl.message_fit(CallRequest(Conversation(), SYSTEM), text).fits


def test_a_short_exchange_before_a_message_that_fills_the_window_stays_as_it_is() -> None:
    """Any summary of "hi" and its answer is larger than they are: nothing is summarized
    (the model was asked for a summary, then "Compaction failed: the prompt did not
    shrink" showed as an error); the reply gets what is left, and the user is told."""
    policy = local_policy(window=3_000, protect=500, minimum=100, reserve=400,
                          keep_recent=800, summary_budget=400)
    backend = ScriptedBackend([writes(GOOD_SUMMARY)] * 4, window=3_000)
    ctl, _, events = controller(backend, policy)
    conv = Conversation()
    conv.append(Message(role="user", content="hi"))
    conv.append(Message(role="assistant", content="Hello.", stopped=True))
    text = long_message(backend, 2_540)
    conv.append(Message(role="user", content=text))
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert not backend.calls  # no summary asked for
    assert not events and req.compaction is None and not conv.compactions
    assert [m["content"] for m in req.messages[1:]] == ["hi", "Hello.", text]
    assert policy.reserve > 3_000 - req.prompt_tokens > 0
    assert any("leaves less than the reserve" in n for n in req.notices)
