"""Property tests: random transcripts never exceed the window, tool pairs never split."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from assistant.compaction.budget import compaction_budget
from assistant.compaction.controller import ContextController
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.prompts import MECHANICAL_MARKER, SUMMARY_HEADER_SHORT
from assistant.compaction.summary.user_record import USER_RECORD_HEADING
from assistant.config import CompactionSwitches
from assistant.conversation import Conversation, Message, ToolCall
from tests.fakes.scripted import ScriptedBackend

from .helpers import FILLER_SUMMARY, GOOD_SUMMARY, SYSTEM, local_policy, writes

WINDOW = 3_000
POLICY = local_policy(window=WINDOW, protect=500, minimum=100, reserve=400, keep_recent=800,
                      summary_budget=400)

turn = st.fixed_dictionaries({
    "user": st.integers(1, 4_000),
    "tools": st.lists(st.tuples(st.integers(1, 2_500), st.booleans()), max_size=3),
    "answer": st.integers(1, 200),
    "stopped": st.booleans(),
})


def _words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i % 7}" for i in range(n))


def _check_pairs(messages: list[dict[str, Any]]) -> None:
    calls_seen: set[str] = set()
    answered: set[str] = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    for m in messages:
        for call in m.get("tool_calls", []):
            calls_seen.add(call["id"])
            assert call["id"] in answered, "a kept tool call lost its result"
        if m["role"] == "tool":
            assert m["tool_call_id"] in calls_seen, "a kept tool result lost its call"


def _t(user: int, tools: list[tuple[int, bool]], answer: int, stopped: bool) -> dict[str, Any]:
    return {"user": user, "tools": tools, "answer": answer, "stopped": stopped}


# About a minute (each example is a whole chat through prepare): `make test` runs it.
@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(turn, min_size=1, max_size=10), prune=st.booleans(),
       good=st.lists(st.booleans(), min_size=1, max_size=8))
# A turn split by an earlier compaction, a stopped reply and a long new message: the pending
# part cannot stay whole beside the previous summary, so it has to be split.
@example(
    turns=[*[_t(1, [], 1, False)] * 4, _t(340, [], 1, False), _t(1, [(1, False)], 1, False),
           _t(1, [(1, False)] * 3, 1, False),
           _t(1456, [(1, False), (301, False), (452, False)], 75, True), _t(559, [], 1, False)],
    prune=False, good=[False],
)
# A stopped reply leaves two turns pending (its outputs, then a long new question): the
# earlier turn must give way when the latest one alone barely fits beside a summary.
@example(
    turns=[_t(188, [], 1, False), _t(707, [(1191, False)], 1, False), _t(188, [], 1, False),
           _t(202, [(95, False), (309, False)], 1, True), _t(945, [], 1, False)],
    prune=False, good=[False],
)
# A new message nearly the size of the window after a short stopped turn: the summary of
# that turn is larger than the turn; its model part gives way so the reply keeps its room.
@example(turns=[_t(1, [], 106, True), _t(1159, [], 1, False)], prune=False, good=[False])
# A new message that leaves less room than any summary's header: the short turn before it
# stays whole and the reply gets what is left (with a notice).
@example(turns=[_t(1, [], 1, True), _t(1264, [], 1, False)], prune=False, good=[False])
# A stopped 3,118-token turn too large to keep after a summary: it is split, its request
# goes into the record within the record's budget.
@example(turns=[_t(3610, [(79, False)], 21, True), _t(271, [], 66, False),
                _t(823, [(2175, True), (370, True)], 34, True), _t(52, [], 45, False),
                _t(3118, [], 129, True),
                _t(871, [(220, False), (560, False), (96, True)], 130, True),
                _t(417, [], 195, True), _t(1051, [], 101, True), _t(52, [], 45, False),
                _t(201, [(1, False)], 1, False)],
         prune=False, good=[False])
# The same, with what the user said before it in the record too: the record never takes
# more than the summary's room (the prompt was one token over the window).
@example(turns=[_t(1, [], 1, False), _t(1, [], 1, False), _t(1, [], 1, False),
                _t(382, [], 1, False), _t(1046, [(1, False), (1, False), (247, False)], 1, False)],
         prune=False, good=[False])
# A new message that nearly fills the window after a turn with a tool step: the summary
# of that turn shrinks to the smallest one (the prompt was two tokens over the window).
@example(turns=[_t(214, [(1, False)], 1, True), _t(1228, [], 1, False)], prune=False,
         good=[False])
# The same after a short stopped turn: the smallest summary, not a failed compaction
# ("did not shrink 2601->2601").
@example(turns=[_t(19, [], 19, True), _t(1228, [], 1, False)], prune=False, good=[False])
# A first message too long to keep whole beside the outputs of its own tool steps: the turn
# is split (the message goes into the record) rather than sent one token over the window.
@example(turns=[_t(1278, [(37, False), (362, False), (362, False)], 1, False)], prune=False,
         good=[False])
def test_prompt_never_exceeds_the_window_and_pairs_stay_together(
    turns: list[dict[str, Any]], prune: bool, good: list[bool]
) -> None:
    replies = [writes(GOOD_SUMMARY) if g else writes(FILLER_SUMMARY) for g in good] * 20
    backend = ScriptedBackend(list(replies), window=WINDOW)
    switches = CompactionSwitches(prune=prune)
    ctl = ContextController(backend, lambda: POLICY, switches=lambda: switches)
    conv = Conversation()

    def call_model() -> None:
        req = ctl.prepare(CallRequest(conv, SYSTEM))
        assert req.prompt_tokens <= WINDOW
        if WINDOW > req.prompt_tokens > WINDOW - POLICY.reserve:  # (a full window: overflow)
            # Only when what is before the newest message is smaller than the smallest
            # summary could be (its header and the frame of the verbatim record): no summary
            # shrinks it, so the reply gets what is left, and the user is told. Or when only
            # the summary stands before the newest user message, which is never cut, and the
            # outputs of its turn (too small to cut) took the rest.
            last_user = max(i for i, m in enumerate(req.messages) if m["role"] == "user")
            newest = max(i for i, m in enumerate(conv.messages) if m.role == "user")
            if last_user == 2 and req.messages[2]["content"] == conv.messages[newest].content:
                assert any("less than the reserve" in n for n in req.notices)
                return
            system = backend.count_prompt(req.messages[:1])
            before = backend.count_prompt(req.messages[:last_user]) - system
            smallest = backend.count_prompt([*req.messages[:1], {
                "role": "user",
                "content": SUMMARY_HEADER_SHORT + MECHANICAL_MARKER + USER_RECORD_HEADING,
            }]) - system
            assert before < smallest, req.messages
            assert any("less than the reserve" in n for n in req.notices)
        assert req.prompt_tokens == backend.count_prompt(req.messages)
        _check_pairs(req.messages)

    for i, t in enumerate(turns):
        conv.append(Message(role="user", content=_words(t["user"], "u")))
        for j, (size, error) in enumerate(t["tools"]):
            call_model()
            call = ToolCall(id=f"c{i}_{j}", name="read_file", arguments={"path": f"f{i}_{j}.py"})
            conv.append(Message(role="assistant", tool_calls=[call]))
            conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                                content=_words(size, "t"), is_error=error))
        call_model()
        conv.append(Message(role="assistant", content=_words(t["answer"], "a"),
                            stopped=t["stopped"]))
    budget = compaction_budget(POLICY, ctl.overhead(SYSTEM, None), backend.count)
    for rec in conv.compactions:
        # The summary grows with the room the window has (the user's words), but never
        # past its budget.
        assert backend.count(rec.summary) <= budget.header + budget.model + budget.record
        assert rec.tokens_after < rec.tokens_before
