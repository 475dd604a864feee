"""Layer 1: pruning old tool outputs (protect, minimum, user turns, idempotent, lossless)."""

from __future__ import annotations

from assistant.compaction.events import PruneEvent
from assistant.compaction.prune import plan_prune
from assistant.compaction.request import CallRequest
from assistant.compaction.tokens import TokenCounter
from assistant.config import CompactionSwitches
from assistant.conversation import PRUNED_PLACEHOLDER, Conversation, Message, ToolCall
from tests.fakes.scripted import ScriptedBackend

from .helpers import SYSTEM, controller, local_policy, shown_outputs, tool_turn


def _three_turns() -> tuple[Conversation, TokenCounter, list[Message]]:
    conv = Conversation()
    results = [tool_turn(conv, i, size=40)[2] for i in range(3)]
    return conv, TokenCounter(ScriptedBackend()), results


def test_nothing_with_fewer_than_two_user_turns() -> None:
    conv = Conversation()
    tool_turn(conv, 0, size=400)
    counter = TokenCounter(ScriptedBackend())
    plan = plan_prune(conv.messages, counter, protect=0, minimum=0)
    assert not plan.applies


def test_exactly_two_user_turns_prunes() -> None:
    conv = Conversation()
    first = tool_turn(conv, 0, size=100)[2]
    conv.append(Message(role="user", content="second turn"))
    counter = TokenCounter(ScriptedBackend())
    plan = plan_prune(conv.messages, counter, protect=0, minimum=1)
    assert plan.message_ids == (first.id,)


def test_protect_boundary_is_inclusive() -> None:
    conv, counter, results = _three_turns()
    newest_two = counter.message(results[2]) + counter.message(results[1])
    plan = plan_prune(conv.messages, counter, protect=newest_two, minimum=0)
    assert plan.message_ids == (results[0].id,)
    plan = plan_prune(conv.messages, counter, protect=newest_two - 1, minimum=0)
    assert plan.message_ids == (results[0].id, results[1].id)


def test_minimum_boundary() -> None:
    conv, counter, results = _three_turns()
    protect = counter.message(results[2])
    gain = sum(counter.message(r) - counter.as_pruned(r) for r in results[:2])
    plan = plan_prune(conv.messages, counter, protect=protect, minimum=gain)
    assert plan.applies and plan.tokens_freed == gain
    plan = plan_prune(conv.messages, counter, protect=protect, minimum=gain + 1)
    assert not plan.applies


def test_only_tool_results_are_touched_and_pruning_is_lossless() -> None:
    conv, _, results = _three_turns()
    big_user = conv.append(Message(role="user", content="huge " * 3000))
    ctl, _be, events = controller(policy=local_policy(protect=0, minimum=1))
    freed = ctl.prune(conv)
    assert freed > 0
    assert not big_user.pruned
    assert all(m.role == "tool" for m in conv.messages if m.pruned)
    assert all(r.pruned for r in results)
    assert results[0].content.startswith("line 0")  # original kept
    assert results[0].to_openai()["content"] == PRUNED_PLACEHOLDER
    assert isinstance(events[0], PruneEvent) and events[0].tokens_freed == freed


def test_pruning_is_idempotent() -> None:
    conv, _, _ = _three_turns()
    ctl, _, events = controller(policy=local_policy(protect=100, minimum=1))
    assert ctl.prune(conv) > 0
    assert ctl.prune(conv) == 0
    assert len(events) == 1


def test_already_pruned_results_are_skipped_but_counted() -> None:
    conv, counter, results = _three_turns()
    results[0].pruned = True
    plan = plan_prune(conv.messages, counter, protect=0, minimum=0)
    assert results[0].id not in plan.message_ids
    # Every turn was answered ("Answer i."), so the newest result may go too.
    assert set(plan.message_ids) == {results[1].id, results[2].id}


def test_newest_result_of_the_current_turn_is_kept_even_if_larger_than_protect() -> None:
    conv = Conversation()
    old = tool_turn(conv, 0, size=200)[2]
    conv.append(Message(role="user", content="read the big one"))
    call = ToolCall(name="read_file", arguments={"path": "big.py"})
    conv.append(Message(role="assistant", tool_calls=[call]))
    big = conv.append(Message(role="tool", tool_call_id=call.id, content="x y " * 3_000))
    counter = TokenCounter(ScriptedBackend())
    plan = plan_prune(conv.messages, counter, protect=100, minimum=1)
    assert plan.message_ids == (old.id,)
    conv.append(Message(role="assistant", content="done"))
    conv.append(Message(role="user", content="next"))
    plan = plan_prune(conv.messages, counter, protect=100, minimum=1)
    assert plan.message_ids == (old.id, big.id)  # no longer the current turn


def test_observer_sees_the_prune() -> None:
    seen: list[tuple[list[str], int]] = []

    class Obs:
        def message_appended(self, message: Message) -> None: ...
        def messages_pruned(self, ids: list[str], freed: int) -> None:
            seen.append((ids, freed))
        def compaction_added(self, record: object) -> None: ...

    conv, _, results = _three_turns()
    conv.subscribe(Obs())
    ctl, _, _ = controller(policy=local_policy(protect=0, minimum=1))
    freed = ctl.prune(conv)
    assert seen == [([r.id for r in results], freed)]  # all three were answered


def test_prune_switch_off_prunes_nothing() -> None:
    conv, _, results = _three_turns()
    ctl, _, events = controller(
        policy=local_policy(protect=0, minimum=1), switches=lambda: CompactionSwitches(prune=False)
    )
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.pruned_tokens == 0 and not any(r.pruned for r in results) and not events


def test_prepare_prunes_and_reports_tokens() -> None:
    conv, _, _results = _three_turns()
    ctl, _, _ = controller(policy=local_policy(protect=0, minimum=1))
    before = ctl.estimate(conv, SYSTEM)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.pruned_tokens > 0
    # The prompt as built shrank by what was reported (the one sent writes earlier turns
    # as notes, which only shortens it further).
    assert ctl.estimate(conv, SYSTEM) == before - req.pruned_tokens
    assert ctl.measure(CallRequest(conv, SYSTEM)).prompt_tokens == before - req.pruned_tokens
    assert req.prompt_tokens <= before - req.pruned_tokens
    cleared = shown_outputs(req.messages)
    assert cleared and all(c.startswith(PRUNED_PLACEHOLDER[:-1]) for c in cleared)


def test_empty_history() -> None:
    ctl, _, events = controller()
    req = ctl.prepare(CallRequest(Conversation(), SYSTEM))
    assert req.pruned_tokens == 0 and req.compaction is None and len(req.messages) == 1
    assert not events
