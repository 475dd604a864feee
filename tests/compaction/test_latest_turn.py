"""The history is kept within the measured target; the latest turn may use the whole window.

A policy whose target (2,048 tokens, the size SmolLM2 answers well from) is smaller than
the model's window (8,192, the hard limit): a message between the two is accepted and sent
whole, with what comes before it compacted to within the target; one larger than the
window's room is refused with its size and the room; and once it is history, the next
prompt is back within the target.
"""

from __future__ import annotations

from dataclasses import replace

from assistant.compaction.budget import minimal_summary
from assistant.compaction.request import CallRequest
from assistant.config import default_local
from assistant.conversation import Conversation, Message, ToolCall
from tests.fakes.scripted import ScriptedBackend

from .helpers import GOOD_SUMMARY, SYSTEM, controller, long_message, tool_turn, writes

WINDOW = 8_192
TARGET = 2_048


def _policy():  # type: ignore[no-untyped-def]
    return replace(default_local().effective("local", TARGET), hard_window=WINDOW)



def _chat(turns: int) -> Conversation:
    conv = Conversation()
    for i in range(turns):
        tool_turn(conv, i, size=30)
    return conv


def test_a_message_between_target_and_window_is_accepted_one_over_the_window_refused() -> None:
    backend = ScriptedBackend([], window=WINDOW)
    ctl, _, _ = controller(backend, _policy())
    conv = _chat(6)
    text = long_message(backend, 4_000)
    fit = ctl.message_fit(CallRequest(conv, SYSTEM), text)
    assert fit.fits and fit.tokens > TARGET
    pol = _policy()
    room = WINDOW - pol.reserve - ctl.overhead(SYSTEM, None) - minimal_summary(
        pol, backend.count
    )
    assert fit.room == room  # measured in the window, not in the target
    over = long_message(backend, room + 10)
    refused = ctl.message_fit(CallRequest(conv, SYSTEM), over)
    assert not refused.fits and refused.room == room and refused.tokens > room
    assert f"room for {room:,}" in refused.refusal()


def test_the_history_stays_within_the_target_while_the_latest_message_exceeds_it() -> None:
    backend = ScriptedBackend([writes(GOOD_SUMMARY)] * 8, window=WINDOW)
    ctl, _, _ = controller(backend, _policy())
    conv = _chat(14)
    # Before the long message: the chat is kept within the target.
    conv.append(Message(role="user", content="A short question about src/file_3.py."))
    small = ctl.prepare(CallRequest(conv, SYSTEM))
    assert small.prompt_tokens + _policy().reserve <= TARGET
    assert (small.window, small.target) == (WINDOW, TARGET)
    conv.append(Message(role="assistant", content="Answer."))

    text = long_message(backend, 3_500)
    conv.append(Message(role="user", content=text))
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    latest = backend.count_prompt([{"role": "user", "content": text}]) - backend.count_prompt([])
    # Sent whole, byte for byte, beyond the target and within the window.
    assert req.messages[-1] == {"role": "user", "content": text}
    assert req.prompt_tokens > TARGET and req.prompt_tokens + req.reserve <= WINDOW
    assert req.reserve == _policy().reserve
    # What comes before it is within the target: at its smallest form here.
    assert req.prompt_tokens - latest + _policy().reserve <= TARGET
    assert req.compaction is not None and len(req.messages) == 3

    # Once answered it is history: the next question's prompt is back within the target.
    conv.append(Message(role="assistant", content="worker-4, 4 ms."))
    conv.append(Message(role="user", content="And request id=111?"))
    after = ctl.prepare(CallRequest(conv, SYSTEM))
    assert after.prompt_tokens + _policy().reserve <= TARGET
    assert after.messages[-1]["content"] == "And request id=111?"


def test_the_current_turns_tool_output_may_use_the_window_too() -> None:
    """A tool output of the turn being answered is not cut to the target."""
    backend = ScriptedBackend([writes(GOOD_SUMMARY)] * 8, window=WINDOW)
    ctl, _, _ = controller(backend, _policy())
    conv = _chat(10)
    conv.append(Message(role="user", content="Read src/big.py and tell me what it does."))
    call = ToolCall(name="read_file", arguments={"path": "src/big.py"})
    conv.append(Message(role="assistant", content="", tool_calls=[call]))
    body = "".join(f"line {n} of the big file with some words in it\n" for n in range(300))
    result = conv.append(Message(role="tool", tool_call_id=call.id, name="read_file", content=body))
    # Not answered yet: the model is about to read it.
    out_tokens = backend.count(result.content)
    assert out_tokens > TARGET
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert not req.trimmed  # shown whole
    assert any(m.get("content") == result.content for m in req.messages)
    assert req.prompt_tokens + req.reserve <= WINDOW
