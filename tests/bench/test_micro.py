"""The focused measurements on the scripted backend (the real-model side runs in the
integration test)."""

from __future__ import annotations

import json

import pytest

from bench.cli import main
from bench.micro import generation_speed, policy_time, recall_time, summary_time

from .helpers import scripted

#: The scripted model, without the real-session replays (their own tests cover them).
SCRIPTED = ["--model", "scripted", "--no-real-sessions"]


def test_policy_and_summary_time_on_any_backend() -> None:
    backend = scripted(window=10_000)
    pt = policy_time(backend, calls=5)
    assert pt["window"] == 10_000
    assert 0 < pt["prompt_tokens"] <= 10_000 - 1_024  # just below the compaction threshold
    assert pt["policy_ms"] > 0 and pt["prepare_ms"] > 0 and pt["prepare_turn_ms"] > 0
    st = summary_time(scripted(window=8_192))
    assert st["seconds"] >= 0 and st["tokens_after"] < st["tokens_before"]


def test_generation_speed_needs_a_llama_model() -> None:
    assert generation_speed(scripted()) is None


@pytest.mark.slow  # a whole W3 run with the summary timed warm and cold
def test_cli_runs_the_measurements(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SCRIPTED, "--workload", "W3", "--strategy", "a",
                 "--no-questions", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["policy_time"]["window"] == 10_000
    st = data["summary_time"]
    assert st["tokens_before"] > 0 and st["warm"] is True
    assert st["cold"]["warm"] is False and st["cold"]["tokens_before"] == st["tokens_before"]
    assert data["speed"] is None
    goals = [t["goal"] for t in data["targets"]]
    assert any("policy time" in g for g in goals) and any("summarizing" in g for g in goals)


def test_quick_run_leaves_the_summary_time_to_the_full_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*SCRIPTED, "--quick", "--workload", "W3", "--strategy", "a",
                 "--no-questions", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary_time"] is None and data["policy_time"]["window"] == 10_000
    assert any("measured in the full run" in n for n in data["notes"])


def test_recall_time_reports_retrieval_over_a_long_chat() -> None:
    """Correctness of the measurement (the timing itself is not asserted)."""
    got = recall_time(messages=600, queries=6)
    assert got["messages"] == 600 and got["passages"] >= 600
    assert got["queries"] == 6 and 0 < got["with_excerpts"] <= 6
    assert got["find_ms_max"] >= got["find_ms_median"] > 0
