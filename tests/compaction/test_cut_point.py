"""Cut point: keep budget, valid boundaries, tool pairs, stopped messages, split turns."""

from __future__ import annotations

from assistant.compaction.cut_point import find_cut, valid_cuts
from assistant.conversation import Message, ToolCall


def _turn(i: int, tools: int = 1) -> list[Message]:
    out = [Message(role="user", content=f"u{i}")]
    for t in range(tools):
        call = ToolCall(id=f"c{i}_{t}", name="read_file", arguments={"path": "x"})
        out.append(Message(role="assistant", tool_calls=[call]))
        out.append(Message(role="tool", tool_call_id=call.id, content="r"))
    out.append(Message(role="assistant", content=f"a{i}"))
    return out


def test_empty_history() -> None:
    plan = find_cut([], [], keep=100)
    assert plan.cut == 0 and not plan.summarizes_anything


def test_everything_fits_exactly_at_keep() -> None:
    msgs = _turn(0) + _turn(1)
    plan = find_cut(msgs, [10] * len(msgs), keep=10 * len(msgs))
    assert plan.cut == 0
    plan = find_cut(msgs, [10] * len(msgs), keep=10 * len(msgs) - 1)
    assert plan.cut > 0


def test_cut_snaps_to_a_user_message_and_keeps_at_most_keep() -> None:
    msgs = _turn(0) + _turn(1) + _turn(2)  # 4 messages per turn
    plan = find_cut(msgs, [10] * 12, keep=45)  # 4 messages fit; the last turn starts at 8
    assert plan.cut == 8 and plan.kept_tokens == 40
    assert msgs[plan.cut].role == "user" and not plan.split_turn


def test_never_between_a_tool_call_and_its_results() -> None:
    call_a = ToolCall(id="a", name="grep")
    call_b = ToolCall(id="b", name="grep")
    msgs = [
        Message(role="user", content="u"),
        Message(role="assistant", tool_calls=[call_a, call_b]),
        Message(role="tool", tool_call_id="a", content="r"),
        Message(role="tool", tool_call_id="b", content="r"),
        Message(role="assistant", content="done"),
        Message(role="user", content="next"),
    ]
    valid = valid_cuts(msgs)
    assert valid == [True, True, False, False, True, True, True]
    # budget lands on the second tool result: snap forward past it, to the turn boundary
    plan = find_cut(msgs, [1, 1, 1, 1, 1, 1], keep=3)
    assert plan.cut == 5
    # inside the last turn: the assistant message after the results
    plan = find_cut(msgs[:5], [1, 1, 1, 1, 1], keep=2)
    assert plan.cut == 4 and plan.split_turn and plan.turn_start == 0


def test_tool_call_at_the_cut_keeps_call_with_results() -> None:
    msgs = _turn(0) + _turn(1, tools=2)
    plan = find_cut(msgs, [5] * len(msgs), keep=5 * 5)
    kept = msgs[plan.cut :]
    ids = {c.id for m in kept for c in m.tool_calls}
    assert all(m.tool_call_id in ids for m in kept if m.role == "tool")
    summarized_calls = {c.id for m in msgs[: plan.cut] for c in m.tool_calls}
    assert not any(m.tool_call_id in summarized_calls for m in kept)


def test_turn_boundaries_are_preferred_over_assistant_messages() -> None:
    msgs = _turn(0, tools=3) + _turn(1)
    plan = find_cut(msgs, [10] * len(msgs), keep=60)  # start lands inside turn 0
    assert plan.cut == 8 and msgs[8].role == "user" and not plan.split_turn


def test_never_cut_at_a_stopped_message() -> None:
    msgs = [
        Message(role="user", content="u0"),
        Message(role="assistant", content="a0"),
        Message(role="assistant", content="partial", stopped=True),
        Message(role="user", content="u1"),
    ]
    assert not valid_cuts(msgs)[2]
    plan = find_cut(msgs, [10, 10, 10, 10], keep=20)
    assert plan.cut == 3


def test_single_turn_larger_than_keep_is_split_at_an_assistant_message() -> None:
    msgs = _turn(0) + _turn(1, tools=4)  # turn 1: user + 8 tool msgs + answer
    counts = [10] * len(msgs)
    plan = find_cut(msgs, counts, keep=35)
    assert plan.split_turn
    assert msgs[plan.cut].role == "assistant"
    assert plan.turn_start == 4 and msgs[plan.turn_start].role == "user"
    assert plan.history_end == 4 and plan.kept_tokens <= 35


def test_split_turn_without_its_user_message_is_not_split() -> None:
    msgs = _turn(0, tools=4)[1:]  # the turn's user message was summarized earlier
    plan = find_cut(msgs, [10] * len(msgs), keep=25)
    assert plan.cut > 0 and not plan.split_turn


def test_one_tool_output_bigger_than_the_window() -> None:
    msgs = _turn(0) + _turn(1)
    counts = [10] * len(msgs)
    counts[6] = 50_000  # turn 1's tool result
    plan = find_cut(msgs, counts, keep=3_000, limit=8_000)
    assert plan.cut == 7  # keep only the final answer
    assert plan.kept_tokens == 10
    plan = find_cut(msgs[:7], counts[:7], keep=3_000, limit=8_000)
    assert plan.cut == 7 and plan.kept_tokens == 0  # nothing valid fits: summarize all


def test_backward_snap_when_forward_reaches_the_end() -> None:
    msgs = [*_turn(0), Message(role="user", content="big")]
    counts = [10, 10, 10, 10, 500]
    plan = find_cut(msgs, counts, keep=100, limit=1_000)
    assert plan.cut == 4 and plan.kept_tokens == 500
    plan = find_cut(msgs, counts, keep=100, limit=400)
    assert plan.cut == 5
