"""The side-by-side section's parts that need no server: the front ends' front cut, the
accuracy count and the table (the runs themselves are measured with ``--side-by-side``)."""

from __future__ import annotations

from assistant.compaction.request import CallRequest
from assistant.compaction.tokens import TokenCounter
from assistant.config import EffectivePolicy, Settings
from assistant.conversation import Conversation, Message, ToolCall
from bench.metrics import FactResult, RunRecord, summarize
from bench.runner import RunOptions, run_workload
from bench.side_by_side import EngineRow, accuracy, render, window_for
from bench.strategies import FrontCut, build_strategy

from .helpers import chat_workload, scripted

SYSTEM = "You are a test assistant."


def _policy(window: int, reserve: int = 100) -> EffectivePolicy:
    return EffectivePolicy("local", window, protect=0, minimum=0, reserve=reserve,
                           keep_recent=0, summary_budget=128)


def test_front_cut_drops_only_the_oldest_messages_that_do_not_fit() -> None:
    backend = scripted()
    conv = Conversation()
    msgs = [conv.append(Message(role="user", content="same words " * 40)) for _ in range(10)]
    counter = TokenCounter(backend)
    size = counter.message(msgs[0])
    overhead = counter.overhead(SYSTEM, None)
    pol = _policy(window=overhead + 7 * size + 100, reserve=100)  # 7 of the 10 fit
    manager = FrontCut(backend, lambda: pol)
    req = manager.prepare(CallRequest(conv, SYSTEM))
    assert [m["content"] for m in req.messages[1:]] == [m.content for m in msgs[3:]]
    assert req.prompt_tokens + pol.reserve <= pol.window
    assert len(manager.drops) == 3 and all(d.messages_dropped == 1 for d in manager.drops)


def test_front_cut_never_orphans_a_tool_result() -> None:
    backend = scripted()
    conv = Conversation()
    conv.append(Message(role="user", content="read it"))
    call = ToolCall(name="read_file", arguments={"path": "a.py"})
    conv.append(Message(role="assistant", tool_calls=[call]))
    conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                        content="x = 1\n" * 200))
    conv.append(Message(role="user", content="what is x?"))
    counter = TokenCounter(backend)
    total = counter.overhead(SYSTEM, None) + sum(counter.message(m) for m in conv.messages)
    manager = FrontCut(backend, lambda: _policy(window=total, reserve=50))
    req = manager.prepare(CallRequest(conv, SYSTEM))
    assert all(m["role"] != "tool" for m in req.messages)
    assert req.messages[-1]["content"] == "what is x?"


def test_front_cut_on_a_workload_never_overflows_and_forgets_the_start() -> None:
    run = run_workload(scripted(window=2_048), chat_workload(14), "front-cut",
                       options=RunOptions(ask_questions=False))
    s = summarize(run)
    assert s.overflowed_calls == 0 and s.compactions >= 1 and s.prunes == 0
    assert s.retention_context == 0.0  # the facts were in the first turn, cut first
    # The switches the agent reads: a front cut retries after an overflow, never summarizes.
    strategy = build_strategy("front-cut", scripted(), Settings())
    assert strategy.settings.compaction.compact_on_overflow
    switches = strategy.settings.compaction
    assert not switches.auto_compact and not switches.prune


def test_accuracy_counts_only_questions_asked_and_the_table_shows_it() -> None:
    run = RunRecord(workload="W1", strategy="policy", model="m", mode="local", window=1280)
    run.facts = [
        FactResult("constraint", "a", True, answered=True),
        FactResult("path", "b", True, answered=False),
        FactResult("number", "c", False, answered=None),  # not asked
    ]
    assert accuracy(run) == (1, 2)
    wl = chat_workload(2)
    row = EngineRow("embedded engine, app policy", "policy", 0.5, 0.9, 1200, 60, 0.05,
                    310.0, 1, 2, 0, 42.0, 0)
    table = render([row], wl, "python -m bench --side-by-side --quick")
    assert f"window {window_for(wl):,}" in table
    assert "| embedded engine, app policy | 0.50 / 0.90 | 1,200 | 60 (5.0%) | 0 | 0 | 310 | " \
           "1/2 | 42 |" in table
