"""bench.wait_workload and ``python -m bench.compaction_wait --workload``: a workload's user
steps through the session service (its real worker thread) on the scripted model."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import pytest

import bench.compaction_wait as cw
from bench.recall_answers import settings_for
from bench.wait_workload import run_workload, typed, user_steps
from bench.workloads import ChatStep, ToolStep, generate
from tests.fakes.scripted import ScriptedBackend
from tests.service.test_compaction_ahead import _model


def scripted(_model_name: str, _n_ctx: int, _threads: int) -> ScriptedBackend:
    return ScriptedBackend([_model] * 400, window=2048, trained_context=2048,
                           ignore_grammar=True)


def test_w2_compacts_inside_the_turn_or_with_the_summary_written_while_the_user_reads(
) -> None:
    settings = settings_for("scripted", None, 16, None)
    inside = run_workload(generate("W2"), settings, scripted, ahead=False, turns=20)
    ahead = run_workload(generate("W2"), settings, scripted, ahead=True, turns=20)
    assert inside.window == ahead.window == 2048
    assert inside.messages == ahead.messages == 20 and not inside.cut and not ahead.cut
    assert len(inside.compactions) >= 2
    # The chat is the same up to the first compaction; after it the summary written ahead
    # (for the span planned while the user read) can differ in size from the one written
    # in the turn, and the next compactions may fall on other steps.
    assert inside.compactions[0].step == ahead.compactions[0].step
    assert len(ahead.compactions) >= 2
    assert not any(c.ahead_used for c in inside.compactions) and not inside.pauses
    assert all(c.ahead_used for c in ahead.compactions)
    # The user read after every reply but the last; some pauses wrote the next summary.
    assert len(ahead.pauses) == 19 and any(p.wrote for p in ahead.pauses)
    assert all(p.kind for p in ahead.pauses if p.wrote)
    assert not any(p.capped for p in ahead.pauses)
    assert ahead.median is not None and inside.median is not None
    # The prompt the compacting turn evaluated after its summary (what a summary changed
    # between compactions would cost the next turn again).
    assert all(c.evaluated > 0 and c.ttft_s is not None for c in inside.compactions)


def test_w1_steps_are_typed_as_the_user_types_them(tmp_path: Path) -> None:
    wl = generate("W1")
    steps = user_steps(wl, 3)
    assert sum(isinstance(s, ChatStep) for s in steps) == 3
    assert isinstance(steps[-1], ChatStep)
    reads = [s for s in steps if isinstance(s, ToolStep) and s.tool == "read_file"]
    assert reads and typed(reads[0], tmp_path) == f"/read {reads[0].arguments['path']}"
    [write] = [s for s in steps if isinstance(s, ToolStep) and s.tool == "write_file"]
    assert typed(write, tmp_path) is None  # the user saved the file: nothing typed
    saved = tmp_path / str(write.arguments["path"])
    assert saved.read_text(encoding="utf-8") == write.arguments["content"]
    assert len(user_steps(wl, None)) == len(wl.steps)


def test_w1_runs_its_reads_and_messages_through_the_service() -> None:
    settings = settings_for("scripted", None, 16, None)
    got = run_workload(generate("W1"), settings, scripted, ahead=True, turns=4)
    assert got.messages == 4 and got.steps == len(user_steps(generate("W1"), 4))
    assert got.compactions, "W1's files fill a 2,048-token window within four turns"
    # The user reads after each reply (not after a /read): three pauses before the last.
    assert len(got.pauses) == 3


def test_a_budget_cuts_the_run_and_says_where() -> None:
    settings = settings_for("scripted", None, 16, None)
    got = run_workload(generate("W2"), settings, scripted, ahead=False, budget_s=0.0)
    assert got.steps == 0 and got.cut == "time budget of 0 s reached before step 1"


def test_the_command_line_reports_both_modes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # main() points the app's home at a temporary folder; monkeypatch restores them after.
    for name in ("ASSISTANT_HOME", "ASSISTANT_MODEL_DIR", "ASSISTANT_CALIBRATE"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    monkeypatch.setattr(cw, "_load", scripted)
    assert cw.main(["--workload", "W2", "--turns", "20", "--mode", "both", "--json"]) == 0
    inside, ahead = json.loads(capsys.readouterr().out)
    assert (inside["ahead"], ahead["ahead"]) == (False, True)
    assert inside["messages"] == ahead["messages"] == 20
    assert ahead["compactions"]
    assert ahead["median"] == statistics.median(c["wait_s"] for c in ahead["compactions"])
    assert cw.main(["--workload", "W2", "--turns", "20", "--mode", "ahead"]) == 0
    text = capsys.readouterr().out
    assert "W2 summary written ahead (window 2,048): 20 step(s), 20 message(s)" in text
    assert "summary written ahead used" in text and "reading pauses that wrote" in text
    assert "the turn then evaluated" in text


def test_the_summaries_are_counted_by_who_wrote_them() -> None:
    from bench.wait_workload import source, sources

    rejected = "by the extractive fallback: the model's summaries were rejected twice (x)"
    not_asked = ("by the extractive fallback: the model was not asked, its summaries were "
                 "rejected in 2 compactions in a row")
    record = "is only the record of what the user said: the newest messages leave no room"
    assert source("model", "written by the model under the summary grammar") == "model"
    assert source("extractive", rejected) == "rejected"
    assert source("extractive", not_asked) == "not asked"
    assert source("extractive", record) == "record"
    from assistant.compaction.summary import DEFERRED_NOTE

    assert source("extractive", DEFERRED_NOTE) == "code now"
    assert sources([("extractive", DEFERRED_NOTE), ("model", "")]) == (
        "1 the model's (accepted), 1 the code's at once (the model's left to the reading "
        "pauses)")
    assert sources([("extractive", not_asked), ("model", ""), ("extractive", rejected),
                    ("model", "")]) == (
        "2 the model's (accepted), 1 extractive after rejection, 1 extractive, model not asked")
