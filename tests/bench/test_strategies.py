"""The five strategies behave as specified on scripted workloads."""

from __future__ import annotations

import time

import pytest

from assistant.compaction.request import CallRequest
from assistant.compaction.summary.summarizer import (
    ExtractiveSummarizer,
    Summarizer,
    SummaryOutcome,
    SummaryRequest,
)
from assistant.compaction.tokens import TokenCounter
from assistant.config import EffectivePolicy, Settings
from assistant.conversation import Conversation, Message, ToolCall
from assistant.llm.base import CancelToken, LLMBackend
from bench.metrics import summarize
from bench.runner import RunOptions, run_workload
from bench.strategies import (
    DropHalf,
    NoManagement,
    TimedManager,
    build_strategy,
    canonical_strategy,
    pimono_policy,
)

from .helpers import chat_workload, scripted, tool_workload

NO_QUESTIONS = RunOptions(ask_questions=False)
SYSTEM = "You are a test assistant."


def _policy(window: int, reserve: int = 100) -> EffectivePolicy:
    return EffectivePolicy("local", window, protect=0, minimum=0, reserve=reserve,
                           keep_recent=0, summary_budget=128)


def test_names_and_aliases() -> None:
    assert canonical_strategy("a") == "policy"
    assert canonical_strategy("pi-mono") == "summarize-only"
    assert canonical_strategy("E") == "none"
    with pytest.raises(ValueError, match="unknown strategy"):
        canonical_strategy("magic")


def test_pimono_thresholds_scale_like_mode_policy() -> None:
    local = pimono_policy("local", 8_192)  # 8,192 / 131,072 = 1/16
    assert (local.window, local.reserve, local.keep_recent, local.summary_budget) == (
        8_192, 1_024, 1_250, 819)
    standard = pimono_policy("standard", 32_768)  # 1/4
    assert (standard.reserve, standard.keep_recent, standard.summary_budget) == (
        4_096, 5_000, 3_276)
    assert pimono_policy("standard", 200_000).reserve == 16_384  # never scaled up


def test_settings_switches_per_strategy() -> None:
    backend = scripted()
    base = Settings()
    got = {n: build_strategy(n, backend, base).settings.compaction for n in
           ("policy", "summarize-only", "prune-only", "drop-half", "none")}
    assert got["policy"].prune and got["policy"].auto_compact
    assert not got["summarize-only"].prune and got["summarize-only"].auto_compact
    assert got["prune-only"].prune and not got["prune-only"].auto_compact
    assert not got["prune-only"].compact_on_overflow
    assert not got["none"].prune and not got["none"].compact_on_overflow


def test_none_reports_the_first_overflowing_call() -> None:
    backend = scripted(window=2_048)
    run = run_workload(backend, chat_workload(14), "none", options=NO_QUESTIONS)
    chat = [c for c in run.calls if c.kind == "chat"]
    first = next(i for i, c in enumerate(chat, start=1) if c.prompt_tokens >= 2_048)
    s = summarize(run)
    assert s.first_overflow_call == first > 1
    assert all(not c.overflowed for c in chat[: first - 1])
    assert all(c.overflowed for c in chat[first - 1 :])  # it only grows from there
    assert s.overflowed_calls == len(chat) - first + 1
    assert s.compactions == 0 and s.prunes == 0
    assert run.final_overflowed and s.retention_context == 0.0


def test_drop_half_drops_the_oldest_half_by_tokens() -> None:
    backend = scripted()
    conv = Conversation()
    msgs = [conv.append(Message(role="user", content="same words " * 40)) for _ in range(10)]
    counter = TokenCounter(backend)
    size = counter.message(msgs[0])
    overhead = counter.overhead(SYSTEM, None)
    pol = _policy(window=overhead + 7 * size + 100, reserve=100)  # 10 do not fit, 5 do
    manager = DropHalf(backend, lambda: pol)
    req = manager.prepare(CallRequest(conv, SYSTEM))
    assert len(manager.drops) == 1
    assert manager.drops[0].messages_dropped == 5
    assert manager.first_kept_id == msgs[5].id
    assert [m["content"] for m in req.messages[1:]] == [m.content for m in msgs[5:]]
    assert req.prompt_tokens + pol.reserve <= pol.window
    assert manager.drops[0].tokens_before - manager.drops[0].tokens_after == 5 * size
    # The cut is remembered: the next call starts from the same message.
    conv.append(Message(role="user", content="short"))
    again = manager.prepare(CallRequest(conv, SYSTEM))
    assert again.messages[1]["content"] == msgs[5].content and len(manager.drops) == 1


def test_drop_half_never_orphans_a_tool_result() -> None:
    backend = scripted()
    conv = Conversation()
    conv.append(Message(role="user", content="read it " * 30))
    call = ToolCall(name="read_file", arguments={"path": "a.py"})
    conv.append(Message(role="assistant", tool_calls=[call]))
    conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                        content="x = 1\n" * 200))
    conv.append(Message(role="user", content="what is x?"))
    counter = TokenCounter(backend)
    total = counter.overhead(SYSTEM, None) + sum(counter.message(m) for m in conv.messages)
    manager = DropHalf(backend, lambda: _policy(window=total, reserve=100))
    req = manager.prepare(CallRequest(conv, SYSTEM))
    assert req.messages[1]["role"] != "tool"
    assert manager.first_kept_id == conv.messages[3].id


def test_drop_half_on_a_workload_never_overflows_and_forgets() -> None:
    run = run_workload(scripted(window=2_048), chat_workload(14), "drop-half",
                       options=NO_QUESTIONS)
    s = summarize(run)
    assert s.overflowed_calls == 0
    assert s.compactions >= 1 and all(c.kind == "drop" for c in run.compactions)
    assert s.prunes == 0
    assert s.retention_context == 0.0  # both facts were in the dropped first turn


def test_prune_only_prunes_never_summarizes_and_overflows_on_chat() -> None:
    tools = summarize(run_workload(scripted(window=4_096), tool_workload(8), "prune-only",
                                   options=NO_QUESTIONS))
    assert tools.prunes >= 1 and tools.compactions == 0
    chat = summarize(run_workload(scripted(window=2_048), chat_workload(14), "prune-only",
                                  options=NO_QUESTIONS))
    assert chat.compactions == 0 and chat.prunes == 0
    assert chat.overflowed_calls >= 1  # nothing to prune in plain chat


def test_summarize_only_compacts_without_pruning() -> None:
    run = run_workload(scripted(window=4_096), tool_workload(8), "summarize-only",
                       options=NO_QUESTIONS)
    s = summarize(run)
    assert s.prunes == 0 and s.compactions >= 1 and s.overflowed_calls == 0
    assert run.policy["reserve"] == 512  # 16,384 scaled by 4,096 / 131,072


def test_policy_never_overflows_and_keeps_constraints_and_paths() -> None:
    run = run_workload(scripted(window=4_096), tool_workload(8), "policy",
                       options=NO_QUESTIONS)
    s = summarize(run)
    assert s.overflowed_calls == 0 and s.prunes >= 1
    assert s.retention_context_constraints_paths == 1.0


class _SlowSummarizer:
    def __init__(self, backend: LLMBackend, counter: TokenCounter) -> None:
        self.inner = ExtractiveSummarizer(counter)

    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        time.sleep(0.3)
        return self.inner.summarize(request, cancel)


def test_policy_time_excludes_the_summarizer() -> None:
    def slow(b: LLMBackend, c: TokenCounter) -> Summarizer:
        return _SlowSummarizer(b, c)

    backend = scripted(window=4_096)
    strategy = build_strategy("summarize-only", backend, Settings(), summarizer=slow)
    conv = Conversation()
    for i in range(12):
        conv.append(Message(role="user", content=f"message {i} " + "words " * 300))
        conv.append(Message(role="assistant", content="noted"))
    start = time.perf_counter()
    strategy.manager.prepare(CallRequest(conv, SYSTEM))
    elapsed = time.perf_counter() - start
    timing = strategy.manager.timings[-1]
    assert conv.compactions, "the conversation was over the threshold"
    assert timing.summary_wall_s >= 0.3
    # Relative to the call's own duration (a loaded machine slows both): the 0.3 s the
    # summarizer slept is not in the policy's time.
    assert timing.wall_s <= elapsed - 0.25
    assert timing.cpu_s < timing.summary_wall_s


def test_wrappers_keep_the_protocol() -> None:
    backend = scripted()
    inner = NoManagement(backend, lambda: _policy(8_192))
    strategy = build_strategy("none", backend, Settings())
    assert isinstance(strategy.manager, TimedManager)
    seen: list[object] = []
    strategy.manager.on_event = seen.append
    assert strategy.inner.on_event is not None  # forwarded to the wrapped manager
    conv = Conversation()
    conv.append(Message(role="user", content="hi"))
    assert inner.compact(CallRequest(conv, SYSTEM), "manual") is None
    req = strategy.manager.prepare(CallRequest(conv, SYSTEM))
    assert strategy.manager.pending is not None and strategy.manager.last is req


def test_overflow_handling_of_the_baselines() -> None:
    from assistant.compaction.controller import ContextTooLargeError

    backend = scripted()
    conv = Conversation()
    for _ in range(6):
        conv.append(Message(role="user", content="same words " * 40))
    with pytest.raises(ContextTooLargeError):
        NoManagement(backend, lambda: _policy(8_192)).handle_overflow(CallRequest(conv, SYSTEM))
    drop = DropHalf(backend, lambda: _policy(8_192))
    req = drop.handle_overflow(CallRequest(conv, SYSTEM))  # fits, but overflow forces a drop
    assert len(drop.drops) == 1 and len(req.messages) == 1 + 3
    record = drop.compact(CallRequest(conv, SYSTEM), "manual")
    assert record is not None and not conv.compactions  # never stored: no summary exists


def test_quick_workloads_run_in_the_emulated_window() -> None:
    from bench.workloads import generate

    wl = generate("W3", 0, quick=True)
    run = run_workload(scripted(window=8_192), wl, "policy", options=NO_QUESTIONS)
    assert run.window == 1_280
    assert run.policy["reserve"] == 256  # 1,024 scaled by 1,280 / 10,000, floored at 256
    assert summarize(run).overflowed_calls == 0


def test_quick_runs_ask_one_question_per_kind_of_fact() -> None:
    from dataclasses import replace as _replace

    from bench.workloads import generate

    wl = generate("W1", 0, quick=True)
    kinds = {f.kind for f in wl.facts}
    assert len(wl.facts) > len(kinds)  # several constraints: some are not asked
    opts = _replace(NO_QUESTIONS, ask_questions=True, one_question_per_kind=True)
    run = run_workload(scripted(window=8_192), wl, "policy", options=opts)
    asked = [f for f in run.facts if f.answered is not None]
    assert sorted(f.kind for f in asked) == sorted(kinds)
    probes = [c for c in run.calls if c.phase == "probe"]
    assert len(probes) == len(kinds)


def test_summaries_in_the_bench_reuse_the_cached_chat_like_the_app() -> None:
    """The recording wrapper exposes the KV cache: the policy's summaries are written in
    context, evaluating only the request, as in the app."""
    run = run_workload(scripted(window=2_048), chat_workload(14), "policy", options=NO_QUESTIONS)
    summaries = [c for c in run.calls if c.kind == "summary"]
    assert summaries and run.compactions
    first = summaries[0]
    assert first.reused > 0.5 * first.prompt_tokens
    assert first.evaluated < 0.5 * first.prompt_tokens
