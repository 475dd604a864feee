"""The report (markdown, plots, JSON) and the command line, on the scripted backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.report import (
    BenchResult,
    WorkloadInfo,
    from_json,
    render_markdown,
    targets,
    to_json,
    write_report,
)
from bench.runner import RunOptions, run_workload
from bench.strategies import STRATEGY_NAMES, StrategyName
from bench.workloads import WORKLOAD_NAMES

from .helpers import chat_workload, scripted, tool_workload

#: The scripted model, without the real-session replays (their own tests cover them).
SCRIPTED = ["--model", "scripted", "--no-real-sessions"]

PNG = b"\x89PNG\r\n\x1a\n"
STRATEGIES: tuple[StrategyName, ...] = ("policy", "none")


@pytest.fixture(scope="module")
def bench_result() -> BenchResult:
    return _result()


def _result() -> BenchResult:
    result = BenchResult(command="test", started="today", quick=True, seed=0,
                         options={"max_reply_tokens": 48, "step_limit": 1})
    opts = RunOptions(ask_questions=True)
    for wl, window in ((tool_workload(6), 4_096), (chat_workload(14), 2_048)):
        wl.name = "W1" if wl.name == "TT" else "W2"
        result.workloads.append(WorkloadInfo(wl.name, wl.title, "local", "scripted", window,
                                             wl.chat_turns, 0, len(wl.facts)))
        for strategy in STRATEGIES:
            result.runs.append(run_workload(scripted(window=window), wl, strategy, options=opts))
    result.policy_time = {"prepare_ms": 1.5, "policy_ms": 0.2, "exact_count_ms": 1.2,
                          "prompt_tokens": 8_900, "tokenizer": "cl100k", "window": 10_000,
                          "messages": 40}
    result.speed = {"app_tps": 95.0, "raw_tps": 100.0, "prompt_tokens": 900, "tokens": 64,
                    "reps": 3}
    result.summary_time = {"seconds": 12.5, "tokens_before": 7_000, "tokens_after": 1_500,
                           "summarizer": "model", "calls": 1, "prompt_evaluated": 6_000}
    return result


def test_report_is_written_with_plots(tmp_path: Path, bench_result: BenchResult) -> None:
    result = bench_result
    written = write_report(result, tmp_path / "docs" / "BENCHMARKS.md")
    md = (tmp_path / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert "## Targets" in md and "### " in md and "(a) policy" in md and "(e) none" in md
    plots = sorted(p.name for p in (tmp_path / "docs" / "bench").glob("*.png"))
    assert plots == sorted(f"quick_{w}_{m}.png" for w in ("w1", "w2")
                           for m in ("context", "prefill", "turn_time"))
    for name in plots:
        assert (tmp_path / "docs" / "bench" / name).read_bytes()[:8] == PNG
        assert f"(bench/{name})" in md
    data = json.loads((tmp_path / "docs" / "bench" / "results-quick.json").read_text())
    assert len(data["runs"]) == 4 and len(data["summaries"]) == 4
    assert len(written) == 2 + len(plots)


def test_targets_state_the_measured_value(bench_result: BenchResult) -> None:
    got = {t.goal: t for t in targets(bench_result)}
    assert got["(a) never overflows"].met is True
    speed = got["in-app generation >= 90% of raw llama-cpp-python tokens/s"]
    assert speed.met is True and speed.measured.startswith("95%")
    assert got["policy time <= 2 ms per call at a full 10k window"].met is True
    summary = got["summarizing a full local window with the embedded model <= 15 s (2 cores)"]
    assert summary.met is True and "12.5 s" in summary.measured
    assert "W1 prefill tokens <= 1.5x new tokens" in got
    assert to_json(bench_result)["targets"]


def test_cli_scripted_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*SCRIPTED, "--quick", "--workload", "W3", "--strategy", "a",
                 "--strategy", "e", "--no-micro", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    by = {s["strategy"]: s for s in data["summaries"]}
    assert set(by) == {"policy", "none"}
    assert by["policy"]["overflowed_calls"] == 0
    assert by["none"]["first_overflow_call"] is not None  # the log is larger than the window


def test_cli_report_and_saved_workloads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*SCRIPTED, "--quick", "--workload", "W2", "--strategy", "d",
                 "--no-micro", "--no-questions", "--report", str(tmp_path / "B.md"),
                 "--save-workloads", str(tmp_path / "wl")])
    assert code == 0
    assert (tmp_path / "B.md").exists()
    assert (tmp_path / "bench" / "quick_w2_context.png").exists()
    assert (tmp_path / "wl" / "W2.jsonl").exists()
    assert "## Targets" in capsys.readouterr().out
    # A saved workload can be run again from its JSONL.
    code = main([*SCRIPTED, "--workload", str(tmp_path / "wl" / "W2.jsonl"),
                 "--strategy", "none", "--no-micro", "--no-questions", "--json"])
    assert code == 0


def test_cli_generate_only_and_usage_errors(tmp_path: Path) -> None:
    assert main(["--generate-only", "--quick", "--save-workloads", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == [
        "W1.jsonl", "W2.jsonl", "W3.jsonl", "W4.jsonl", "W5.jsonl"]
    assert main(["--workload", "W9"]) == 2
    assert main(["--strategy", "magic"]) == 2
    assert main(["--max-reply-tokens", "4"]) == 2


def test_saved_results_render_the_same_report(tmp_path: Path, bench_result: BenchResult) -> None:
    write_report(bench_result, tmp_path / "A.md")
    results = tmp_path / "bench" / "results-quick.json"
    again = from_json(json.loads(results.read_text(encoding="utf-8")))
    assert render_markdown(again) == render_markdown(bench_result)
    assert main(["--rerender", str(results), "--report", str(tmp_path / "B.md")]) == 0
    assert (tmp_path / "B.md").read_text() == (tmp_path / "A.md").read_text()
    assert main(["--rerender", str(results)]) == 2  # needs --report


def test_a_full_and_a_quick_run_in_one_report(tmp_path: Path, bench_result: BenchResult) -> None:
    full = from_json(to_json(bench_result, records=True))
    full.quick = False
    written = write_report([full, bench_result], tmp_path / "C.md")
    md = (tmp_path / "C.md").read_text(encoding="utf-8")
    assert "## Full run" in md and "## Quick run" in md
    assert md.index("## Full run") < md.index("## Quick run")
    assert "| full | (a) never overflows |" in md and "| quick | (a) never overflows |" in md
    names = {p.name for p in written}
    assert {"results-full.json", "results-quick.json", "full_w1_context.png",
            "quick_w1_context.png"} <= names
    # Writing a single run again leaves only its own files.
    write_report(bench_result, tmp_path / "C.md")
    assert not list((tmp_path / "bench").glob("full_*.png"))


def test_checkpoint_and_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = [*SCRIPTED, "--quick", "--workload", "W3",
              "--no-micro", "--no-questions", "--report", str(tmp_path / "R.md")]
    assert main([*common, "--strategy", "a"]) == 0
    saved = tmp_path / "bench" / "results-quick.json"
    assert [r["strategy"] for r in json.loads(saved.read_text())["runs"]] == ["policy"]
    capsys.readouterr()
    assert main([*common, "--strategy", "a", "--strategy", "e", "--resume", str(saved)]) == 0
    assert "resuming: 1 run(s) already done" in capsys.readouterr().err
    runs = json.loads(saved.read_text())["runs"]
    assert [r["strategy"] for r in runs] == ["policy", "none"]
    capsys.readouterr()
    assert main([*common[:-2], "--strategy", "e", "--resume", str(saved), "--json"]) == 0
    assert "W3 with" not in capsys.readouterr().err  # nothing left to run
    full = [c for c in common if c != "--quick"]  # without --quick: a different run
    assert main([*full, "--resume", str(saved)]) == 1


@pytest.mark.slow  # three whole W3 runs
def test_a_quick_and_a_full_command_write_one_report(tmp_path: Path) -> None:
    """``make bench``: the quick comparison, then the full run; the report shows both."""
    report = tmp_path / "docs" / "BENCHMARKS.md"
    common = [*SCRIPTED, "--workload", "W3", "--no-micro", "--no-questions",
              "--report", str(report)]
    assert main([*common, "--quick"]) == 0
    assert main([*common, "--strategy", "a"]) == 0
    md = report.read_text(encoding="utf-8")
    assert md.index("## Full run") < md.index("## Quick run")
    names = {p.name for p in (report.parent / "bench").iterdir()}
    assert {"results-full.json", "results-quick.json", "full_w3_context.png",
            "quick_w3_context.png"} <= names
    # A damaged saved run of the other kind is left out with a message, not a crash.
    (report.parent / "bench" / "results-full.json").write_text("{broken", encoding="utf-8")
    assert main([*common, "--quick"]) == 0
    assert "## Full run" not in report.read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_quick_run_of_every_strategy_on_every_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The quick run's five strategies side by side, as `make bench` runs them (on the scripted
    model: the real-model test runs only the app's policy, to bound its work)."""
    report = tmp_path / "BENCHMARKS.md"
    assert main([*SCRIPTED, "--quick", "--no-micro", "--no-answers", "--report", str(report),
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    summaries = {(s["workload"], s["strategy"]): s for s in data["summaries"]}
    assert set(summaries) == {(w, s) for w in WORKLOAD_NAMES for s in STRATEGY_NAMES}
    for name in WORKLOAD_NAMES:
        assert summaries[name, "policy"]["overflowed_calls"] == 0, name
        # Left unmanaged, every workload outgrows its quick window.
        assert summaries[name, "none"]["first_overflow_call"] is not None, name
        assert summaries[name, "summarize-only"]["prunes"] == 0, name
        assert summaries[name, "summarize-only"]["compactions"] > 0, name
        assert summaries[name, "prune-only"]["compactions"] == 0, name
    assert summaries["W3", "prune-only"]["prunes"] > 0
    assert summaries["W2", "prune-only"]["prunes"] == 0  # nothing to prune without tools
    text = report.read_text(encoding="utf-8")
    for label in ("(a) policy", "(b) summarize only", "(c) prune only", "(d) drop half",
                  "(e) none"):
        assert label in text, label
