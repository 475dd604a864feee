"""A small end-to-end benchmark with the embedded model (the full ``--quick`` run takes
longer than ``make test`` should; this covers the same code path on fewer turns)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.bench.cli import reset_cache
from assistant.bench.metrics import summarize
from assistant.bench.micro import generation_speed
from assistant.bench.report import BenchResult, WorkloadInfo, write_report
from assistant.bench.runner import RunOptions, run_workload
from assistant.bench.strategies import StrategyName
from assistant.bench.workloads import ChatStep, Workload, generate
from assistant.llm.base import LLMBackend


def _first_turns(wl: Workload, turns: int) -> Workload:
    """The workload cut after its ``turns``-th chat message (facts planted by then)."""
    steps = []
    seen = 0
    for step in wl.steps:
        steps.append(step)
        if isinstance(step, ChatStep):
            seen += 1
            if seen == turns:
                break
    wl.steps = steps
    wl.facts = [f for f in wl.facts if f.turn <= turns]
    return wl


@pytest.mark.integration
@pytest.mark.slow
def test_small_bench_with_the_embedded_model(real_backend: LLMBackend, tmp_path: Path) -> None:
    wl = _first_turns(generate("W1", 0, quick=True), 2)
    result = BenchResult(command="test", started="now", quick=True, seed=0,
                         options={"max_reply_tokens": 24, "step_limit": 1})
    opts = RunOptions(max_reply_tokens=24, probe_reply_tokens=16)
    strategies: tuple[StrategyName, ...] = ("policy", "none")
    for strategy in strategies:
        reset_cache(real_backend)
        run = run_workload(real_backend, wl, strategy, options=opts)
        result.runs.append(run)
        s = summarize(run)
        chat = [c for c in run.calls if c.kind == "chat" and c.phase == "workload"]
        assert len(chat) == 2 and s.overflowed_calls == 0
        assert all(c.evaluated > 0 and c.completion_tokens > 0 for c in chat)
        assert chat[1].reused > 0  # the KV cache carried the first turn over
        assert s.gen_tps_median is not None and s.gen_tps_median > 0
        assert s.turn_median_s is not None and s.new_tokens > 0
        assert run.tool_mismatches == 0  # live read_file gave the recorded results
        assert all(f.answered is not None for f in run.facts)
    result.workloads.append(WorkloadInfo("W1", wl.title, "local", "embedded",
                                         result.runs[0].window, 2, 0, len(wl.facts)))
    speed = generation_speed(real_backend, context_tokens=256, max_tokens=16, reps=1)
    assert speed is not None and speed.app_tps > 0 and speed.raw_tps > 0
    written = write_report(result, tmp_path / "BENCHMARKS.md")
    assert all(p.exists() for p in written)
