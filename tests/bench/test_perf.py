"""Issue 14's benchmark figures: re-evaluated share, TTFT against its bound, the report's
prompt-evaluation section and targets, and the chunk-reuse quality arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench import perf_report
from bench.metrics import (
    CallRecord,
    RunRecord,
    TurnRecord,
    raw_seconds,
    summarize,
    ttft_bounds,
)
from bench.report import BenchResult, from_json, render_markdown, targets, to_json
from bench.reuse_quality import (
    PairQuality,
    ReuseQuality,
    candidates,
    default_on,
    kl_divergence,
)


def _run(raw: float | None = 100.0) -> RunRecord:
    run = RunRecord(workload="W1", strategy="policy", model="m", mode="local", window=8192,
                    raw_prefill_tps=raw)
    # Turn 1: the whole first prompt is new. Turn 2: 300 tokens shown for the first time
    # (600 before they were cut to fit) but 1,000 evaluated (a prune changed the middle):
    # 700 evaluated again. Turn 3: 100 new and a 200-token summary written before it: 500
    # evaluated = 300 fresh + 200 again.
    run.calls = [
        CallRecord(1, 1, "workload", "chat", 1_000, evaluated=1_000, new_tokens=1_000,
                   fresh_tokens=1_000),
        CallRecord(2, 2, "workload", "chat", 1_400, evaluated=1_000, reused=400,
                   new_tokens=600, fresh_tokens=300),
        CallRecord(3, 2, "workload", "summary", 900, evaluated=900),
        CallRecord(4, 3, "workload", "chat", 900, evaluated=500, reused=400, new_tokens=100,
                   fresh_tokens=300, shifted=250),
        CallRecord(5, 4, "probe", "chat", 950, evaluated=50, reused=900, new_tokens=40),
    ]
    run.turns = [
        TurnRecord(1, "workload", 12.0, 10.0, 1),
        TurnRecord(2, "workload", 12.0, 6.0, 1),
        TurnRecord(3, "workload", 4.0, 3.0, 1),
        TurnRecord(4, "probe", 1.0, 0.5, 1),
    ]
    return run


def test_reevaluated_share_counts_only_text_shown_before() -> None:
    s = summarize(_run())
    assert s.reevaluated == 700 + 200
    assert s.prefill_evaluated == 2_500
    assert s.reeval_share == pytest.approx(900 / 2_500)
    assert s.reeval_share_all == pytest.approx((900 + 900) / (2_500 + 900))
    assert s.shifted == 250


def test_ttft_is_compared_with_the_new_tokens_at_the_raw_rate() -> None:
    ratios, bounds = ttft_bounds(_run())
    assert bounds == pytest.approx([10.0, 3.0, 3.0])  # 1000, 300, 100+200 tokens at 100/s
    assert ratios == pytest.approx([1.0, 2.0, 1.0])
    s = summarize(_run())
    assert s.ttft_bound_ratio_median == pytest.approx(1.0)
    assert s.ttft_bound_median_s == pytest.approx(3.0)
    assert ttft_bounds(_run(raw=None)) == ([], [])


def test_the_bound_uses_the_raw_rate_of_the_depth_the_new_tokens_are_evaluated_at() -> None:
    # 200 tokens/s in the first 512 positions, 100 from 512 on, 50 from 1,024 on.
    curve = [[0.0, 200.0], [512.0, 100.0], [1024.0, 50.0]]
    assert raw_seconds(curve, 0, 512) == pytest.approx(512 / 200)
    assert raw_seconds(curve, 412, 200) == pytest.approx(100 / 200 + 100 / 100)
    assert raw_seconds(curve, 1_000, 1_000) == pytest.approx(24 / 100 + 976 / 50)
    run = _run()
    run.raw_prefill_curve = curve
    ratios, bounds = ttft_bounds(run)
    # Turn 1: 1,000 new tokens from position 0; turn 2: 300 after 1,100 cached; turn 3:
    # 300 after 600.
    assert bounds == pytest.approx([512 / 200 + 488 / 100, 300 / 50, 300 / 100])
    assert ratios == pytest.approx([10.0 / bounds[0], 6.0 / 6.0, 3.0 / 3.0])
    # A saved run without the curve keeps the empty-context rate.
    assert ttft_bounds(from_json(to_json(_result_of(_run()), records=True)).runs[0])[1] == (
        pytest.approx([10.0, 3.0, 3.0]))


def _result_of(run: RunRecord) -> BenchResult:
    return BenchResult(command="bench", started="2026-11-23", quick=False, seed=0, machine={},
                       options={}, workloads=[], runs=[run])


def _perf() -> dict[str, object]:
    quality = ReuseQuality(64, 32, calls_seen=20, candidates=9)
    for agrees in (True,) * 6 + (False,):
        quality.pairs.append(PairQuality(
            prompt_tokens=1_000, cached_tokens=1_100, prefix=300, shifted=500,
            evaluated_reuse=200, next_token_agrees=agrees, continuation_identical=agrees,
            continuation_common=32 if agrees else 5, positions=32,
            positions_agreeing=32 if agrees else 20, kl_mean=0.01 if agrees else 0.4,
            kl_max=0.5, seconds=1.0,
        ))
    return {
        "prefill": {"prompt_tokens": 2_000, "reps": 3, "config": "2 threads, n_batch 512, "
                    "n_ubatch 512", "app_tps": 190.0, "raw_tps": 195.0, "ratio": 190 / 195,
                    "default_config": "2 threads, n_batch 512, n_ubatch 512",
                    "raw_default_tps": 195.0,
                    "calibration": {"seconds": 6.1, "prompt_tokens": 256, "chosen": "x",
                                    "trials": [[2, 512, 512, 190.0], [1, 512, 512, 120.0]]}},
        "resume": {"history_tokens": 6_012, "prompt_tokens": 6_040, "state_tokens": 6_020,
                   "state_mb": 138.5, "copy_s": 0.3, "write_s": 0.5, "restore_s": 0.4,
                   "cold_ttft_s": 44.0, "cold_evaluated": 6_040, "resume_ttft_s": 0.9,
                   "resume_evaluated": 25, "question_own_s": 0.15, "same_reply": True},
        "reuse_quality": quality.summary(),
    }


def test_quality_summary_and_the_default_decision() -> None:
    summary = _perf()["reuse_quality"]
    assert isinstance(summary, dict)
    assert summary["positions"] == 224 and summary["calls_measured"] == 7
    assert summary["next_token_agreement"] == pytest.approx(6 / 7)
    assert summary["position_agreement"] == pytest.approx((6 * 32 + 20) / 224)
    assert summary["mean_kl"] == pytest.approx((6 * 0.01 + 0.4) / 7)
    assert default_on(summary) is False  # 94.6% of positions < 95%
    assert default_on({**summary, "position_agreement": 0.97, "next_token_agreement": 0.96})
    assert default_on({**summary, "positions": 199}) is None


def test_the_report_shows_the_prompt_evaluation_figures_and_targets() -> None:
    result = BenchResult(command="x", started="now", quick=False, seed=0,
                         runs=[_run()], perf=_perf())
    goals = {t.goal: t for t in targets(result)}
    resume = next(t for g, t in goals.items() if g.startswith("reopened chat"))
    assert resume.met is True and "0.75 s over it" in resume.measured
    reeval = next(t for g, t in goals.items() if "re-evaluated tokens <= 10%" in g)
    assert reeval.met is False and "36.0%" in reeval.measured
    ttft = next(t for g, t in goals.items() if "within 1.5x" in g)
    assert ttft.met is True
    prefill = next(t for g, t in goals.items() if g.startswith("in-app prefill"))
    assert prefill.met is True and "97%" in prefill.measured
    quality = next(t for g, t in goals.items() if g.startswith("chunk reuse on by default"))
    assert "keep off" in quality.measured
    text = render_markdown(result)
    assert "### Prompt evaluation (issue 14)" in text
    assert "| W1 | policy | 900 / 2,500 = 36.0% |" in text
    assert "0.90 s with its saved state" in text and "44.00 s evaluating everything" in text
    assert "the greedy token agrees at 94.6% of 224 positions" in text
    # Saved and read back: the same report.
    again = from_json(to_json(result, records=True))
    assert render_markdown(again) == text


def test_kl_is_zero_for_equal_distributions_and_positive_otherwise() -> None:
    a = np.array([1.0, 2.0, 3.0])
    assert kl_divergence(a, a + 5.0) == pytest.approx(0.0, abs=1e-12)
    p = np.exp(a) / np.exp(a).sum()
    b = np.array([3.0, 2.0, 1.0])
    q = np.exp(b) / np.exp(b).sum()
    assert kl_divergence(a, b) == pytest.approx(float((p * np.log(p / q)).sum()))
    assert not math.isnan(kl_divergence(np.array([1e4, 0.0]), np.array([0.0, 1e4])))


def test_candidates_are_calls_changed_in_the_middle() -> None:
    base = list(range(200))
    pruned = [*base[:50], 999, *base[120:], 7]
    appended = [*base, 1, 2, 3]
    pairs = [(base, pruned), (base, appended), ([], base)]
    assert candidates(pairs, 16) == [(base, pruned)]


def test_perf_section_is_empty_without_measurements() -> None:
    assert perf_report.section({}, [], lambda h, r: "") == ""


def test_a_run_records_the_text_each_call_shows_for_the_first_time() -> None:
    from bench.runner import RunOptions, run_workload

    from .helpers import scripted, tool_workload

    run = run_workload(scripted(window=4_096), tool_workload(6, lines=120), "policy",
                       options=RunOptions(ask_questions=False))
    chat = [c for c in run.calls if c.kind == "chat"]
    assert chat[0].fresh_tokens == chat[0].prompt_tokens == chat[0].evaluated
    # Later calls show a new file and a question: fresh, but no more than the prompt.
    assert all(0 < c.fresh_tokens <= c.prompt_tokens for c in chat[1:])
    s = summarize(run)
    assert s.reeval_share is not None and 0.0 <= s.reeval_share < 1.0
    assert s.reevaluated == sum(max(0, c.evaluated - c.fresh_tokens) for c in chat)


def test_the_restart_target_compares_relaunch_with_before_quitting() -> None:
    """Issue 43: the question's first token after relaunch (state loading included) against
    the same question in the chat never closed, from one run; absent figures, no target."""
    perf = _perf()
    result = BenchResult(command="x", started="now", quick=False, seed=0, runs=[_run()],
                         perf=perf)
    assert not [g for g in (t.goal for t in targets(result)) if g.startswith("restart")]
    perf["resume"].update(live_ttft_s=0.7, live_evaluated=22)
    restart = next(t for t in targets(result) if t.goal.startswith("restart"))
    assert restart.met is True  # 0.9 s after relaunch vs 0.7 s before quitting
    assert "0.90 s after relaunch" in restart.measured and "0.70 s before" in restart.measured
    perf["resume"].update(live_ttft_s=0.5)
    assert next(t for t in targets(result) if t.goal.startswith("restart")).met is False


def test_the_restart_through_the_app_has_its_own_targets() -> None:
    """Issue 43 through the app's service (bench.restart): the time after relaunch against
    before quitting, and the prompt and the compaction the same."""
    perf = _perf()
    asked = {"ttft_s": 1.0, "prompt_tokens": 1_307, "evaluated": 20, "reused": 1_287,
             "compacted": False, "reply": "x"}
    perf["restart"] = {"history_tokens": 1_293, "restored_tokens": 1_287, "open_s": 0.03,
                       "same_prompt": True, "before": asked, "after": {**asked, "ttft_s": 1.2},
                       "live_ttft_s": 1.0, "restart_ttft_s": 1.2}
    result = BenchResult(command="x", started="now", quick=False, seed=0, runs=[_run()],
                         perf=perf)
    got = [t for t in targets(result) if t.goal.startswith("restart through the app")
           or t.goal.startswith("restart: the prompt")]
    assert [t.met for t in got] == [True, True]
    assert "1.20 s after relaunch" in got[0].measured and "same prompt: yes" in got[0].measured
    perf["restart"].update(same_prompt=False, restart_ttft_s=1.6)
    assert [t.met for t in targets(result) if t.goal.startswith("restart through")
            or t.goal.startswith("restart: the prompt")] == [False, False]
