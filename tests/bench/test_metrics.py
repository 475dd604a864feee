"""Metrics: percentiles, the summary of hand-made records, and a small scripted run whose
numbers can be checked by hand."""

from __future__ import annotations

import pytest

from assistant.compaction.context import system_message
from assistant.compaction.summary.summarizer import SummaryOutcome, SummaryRequest
from assistant.compaction.tokens import TokenCounter
from assistant.config import DEFAULT_SYSTEM_PROMPT
from assistant.conversation import Message
from assistant.tools.registry import ToolRegistry
from bench.metrics import (
    CallRecord,
    CompactionStat,
    FactResult,
    PruneStat,
    RunRecord,
    TurnRecord,
    answer_matches,
    facts_in_text,
    median,
    percentile,
    summarize,
)
from bench.report import BenchResult, targets
from bench.runner import RunOptions, run_workload
from bench.workloads import ChatStep, Fact, Workload

from .helpers import chat_workload, scripted


def test_percentile_interpolates_linearly() -> None:
    assert percentile([], 50) is None
    assert median([3.0]) == 3.0
    assert median([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert percentile([10.0, 0.0], 0) == 0.0 and percentile([10.0, 0.0], 100) == 10.0


def test_summary_of_hand_made_records() -> None:
    run = RunRecord(workload="W", strategy="none", model="m", mode="local", window=100)
    run.calls = [
        CallRecord(1, 1, "workload", "chat", 50, evaluated=50, reused=0, new_tokens=50,
                   completion_tokens=10, generate_s=0.5, policy_cpu_s=0.001),
        CallRecord(2, 1, "workload", "summary", 80, evaluated=80),
        CallRecord(3, 2, "workload", "chat", 90, evaluated=30, reused=60, new_tokens=40,
                   completion_tokens=20, generate_s=0.5, policy_cpu_s=0.003),
        CallRecord(4, 3, "workload", "chat", 120, overflowed=True, new_tokens=30,
                   policy_cpu_s=0.002),
        CallRecord(5, 4, "probe", "chat", 10, evaluated=10, new_tokens=0),
    ]
    run.turns = [TurnRecord(1, "workload", 1.0, 0.5, 2), TurnRecord(2, "workload", 3.0, 1.5, 1),
                 TurnRecord(3, "workload", 2.0, None, 1, overflowed=True),
                 TurnRecord(4, "probe", 9.0, 1.0, 1)]
    run.compactions = [CompactionStat("model", "threshold", 4.0, 95, 35, 1)]
    run.prunes = [PruneStat(2, 2, 300), PruneStat(3, 1, 200)]
    run.facts = [FactResult("constraint", "c", True, answered=True),
                 FactResult("path_read", "p", False, answered=False),
                 FactResult("number", "n", False, answered=None)]
    s = summarize(run)
    assert s.chat_calls == 3  # the probe call is not part of the workload
    assert s.overflowed_calls == 1 and s.first_overflow_call == 3 and s.first_overflow_turn == 3
    assert s.prefill_evaluated == 80 and s.new_tokens == 120
    assert s.prefill_ratio == pytest.approx(80 / 120)
    assert s.summary_prefill == 80 and s.prefill_ratio_all == pytest.approx(160 / 120)
    assert s.reused_share == pytest.approx(60 / 140)  # over the calls that ran
    assert s.max_context == 120
    assert s.turn_median_s == 2.0 and s.ttft_median_s == 1.0
    assert s.compactions == 1 and s.compaction_median_s == 4.0
    assert s.compaction_tokens_before == 95 and s.compaction_tokens_after == 35
    assert s.prunes == 2 and s.pruned_tokens == 500
    assert s.policy_cpu_median_ms == pytest.approx(2.0)
    assert s.policy_cpu_max_ms == pytest.approx(3.0)
    assert s.gen_tps_median == pytest.approx(30.0)  # 20/s and 40/s
    assert s.retention_context == pytest.approx(1 / 3)
    assert s.retention_context_constraints_paths == pytest.approx(1 / 2)
    assert s.retention_answered == pytest.approx(1 / 2)
    assert s.summaries_by == {"model": 1} and s.model_summary_share == 1.0


def test_model_summary_acceptance_and_rejections_per_run() -> None:
    run = RunRecord(workload="W", strategy="policy", model="m", mode="local", window=100)
    run.compactions = [
        CompactionStat("model", "threshold", 4.0, 95, 35, 1, ["says nothing specific in: Done"]),
        CompactionStat("extractive", "threshold", 6.0, 95, 40, 2,
                       ["the Goal names nothing from the conversation"] * 2),
        CompactionStat("model", "threshold", 3.0, 95, 30, 3),
        CompactionStat("drop", "threshold", 0.1, 95, 50, 4),
    ]
    s = summarize(run)
    assert s.summaries_by == {"model": 2, "extractive": 1, "drop": 1}
    assert s.model_summary_share == pytest.approx(2 / 3)  # drop-half writes no summary
    assert s.summary_rejections == [
        "says nothing specific in: Done",
        "the Goal names nothing from the conversation",
        "the Goal names nothing from the conversation",
    ]
    assert summarize(RunRecord("W", "none", "m", "local", 100)).model_summary_share is None


def test_compactions_the_model_was_not_asked_for_are_counted_apart() -> None:
    # A window too small for the summary grammar: the model is not asked, which says
    # nothing of its summaries; the report says so instead of "0% by the model".
    run = RunRecord(workload="W", strategy="policy", model="m", mode="local", window=100)
    run.compactions = [
        CompactionStat("extractive", "threshold", 0.1, 95, 40, 1, asked=False),
        CompactionStat("model", "threshold", 3.0, 95, 30, 2),
    ]
    s = summarize(run)
    assert s.model_summary_share == 1.0 and s.summaries_not_asked == 1
    result = BenchResult(command="x", started="now", quick=True, seed=0, runs=[run])
    goal = next(t for t in targets(result) if t.goal.startswith("(issue 13)"))
    assert goal.met is True
    assert goal.measured == ("W: 100% of 1; 1 not asked: the window left the model less "
                             "than the summary grammar needs")
    run.compactions = run.compactions[:1]
    goal = next(t for t in targets(result) if t.goal.startswith("(issue 13)"))
    assert goal.met is None and "W: not asked in 1" in goal.measured


def test_fact_and_answer_matching_ignore_case() -> None:
    assert facts_in_text("Never Use Tabs here", ["never use tabs", "8080"]) == [True, False]
    assert answer_matches("Use SPACES.", ("space",))
    assert not answer_matches("tabs", ("space",))


def test_scripted_run_numbers_by_hand() -> None:
    """Two turns, no management: every number follows from the rendered messages."""
    backend = scripted(reply="OK.")
    wl = Workload("H", "hand", "local", 0, True, 8_192,
                  [ChatStep("hello"), ChatStep("again")],
                  [Fact("number", "n", "again", "q?", ("x",), 1)])
    run = run_workload(backend, wl, "none", options=RunOptions(ask_questions=False))
    chat = [c for c in run.calls if c.kind == "chat"]
    assert len(chat) == 2 and not any(c.overflowed for c in chat)

    tools = ToolRegistry.default().schemas()
    sys_msg = system_message(DEFAULT_SYSTEM_PROMPT).to_openai()
    user1 = {"role": "user", "content": "hello"}
    reply = {"role": "assistant", "content": "OK."}
    user2 = {"role": "user", "content": "again"}
    p1 = backend.count_prompt([sys_msg, user1], tools)
    p2 = backend.count_prompt([sys_msg, user1, reply, user2], tools)
    assert chat[0].prompt_tokens == p1 and chat[1].prompt_tokens == p2
    # First call: nothing cached, everything is new and evaluated.
    assert chat[0].evaluated == p1 and chat[0].reused == 0 and chat[0].new_tokens == p1
    # Second call: new = the reply and the user message as rendered; the cache holds the
    # first prompt plus the reply's tokens, so the reuse is their common prefix.
    counter = TokenCounter(backend)
    new2 = counter.message(Message(role="assistant", content="OK.")) + counter.message(
        Message(role="user", content="again")
    )
    assert chat[1].new_tokens == new2
    first = backend.tokenize(backend.render_prompt([sys_msg, user1], tools))
    cache = first + backend.tokenize("OK.")
    second = backend.tokenize(backend.render_prompt([sys_msg, user1, reply, user2], tools))
    common = 0
    for a, b in zip(cache, second, strict=False):
        if a != b:
            break
        common += 1
    assert chat[1].reused == common and chat[1].evaluated == p2 - common
    s = summarize(run)
    assert s.prefill_evaluated == p1 + p2 - common
    assert s.new_tokens == p1 + new2
    assert s.prefill_ratio == pytest.approx((p1 + p2 - common) / (p1 + new2))
    assert s.compactions == 0 and s.prunes == 0 and s.overflowed_calls == 0
    assert [t.model_calls for t in run.turns] == [1, 1]
    assert run.facts[0].in_context  # "again" is in the last prompt


class _NamesThePort:
    """A model summarizer that names one of the two planted facts (the port)."""

    def summarize(self, request: SummaryRequest, cancel: object) -> SummaryOutcome:
        return SummaryOutcome(text="## Goal\n- Keep port 4321 for the staging server",
                              kind="model")


def test_the_share_of_planted_facts_the_model_written_part_names() -> None:
    # Only the model's part counts: the verbatim record beside it (code's) holds both facts.
    wl = chat_workload(12, words=150)
    run = run_workload(scripted(window=2_048), wl, "summarize-only",
                       options=RunOptions(ask_questions=False),
                       summarizer=lambda _prompt, _counter: _NamesThePort())
    model = [c for c in run.compactions if c.kind == "model"]
    assert model and all(c.facts_planted == 2 and c.facts_in_model_part == 1 for c in model)
    assert summarize(run).model_part_fact_share == 0.5
