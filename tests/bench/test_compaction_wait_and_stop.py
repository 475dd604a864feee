"""bench.compaction_wait and bench.stop_latency on the scripted model (fast dry runs)."""

from __future__ import annotations

from bench.compaction_wait import run_chat
from bench.stop_latency import run as stop_run
from tests.fakes.scripted import ScriptedBackend
from tests.service.test_compaction_ahead import _model


def test_the_wait_with_and_without_summaries_written_ahead() -> None:
    def backend() -> ScriptedBackend:
        return ScriptedBackend([_model] * 200, window=2048, trained_context=2048,
                               ignore_grammar=True)

    inside = run_chat(backend(), window=2048, turns=8, reply=16, ahead=False)
    ahead = run_chat(backend(), window=2048, turns=8, reply=16, ahead=True)
    assert len(inside.waits) == len(ahead.waits) >= 2
    assert not any("written ahead" in n for n in inside.notes)
    assert all("written ahead" in n for n in ahead.notes)
    assert ahead.ahead_s and not inside.ahead_s


def test_stop_latency_is_measured_per_phase() -> None:
    backend = ScriptedBackend(["word " * 400] * 10, delay_per_token=0.02)
    got = stop_run(backend, 1, ("generation", "tool"))
    # Each phase was running when Stop was pressed (a figure, not "ended before Stop").
    assert len(got["generation"]) == 1 and len(got["tool"]) == 1
