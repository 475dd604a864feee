"""``bench --engine server``: the same workload on the embedded engine and on a local
llama-cpp-python server, compared per call (TTFT and decode speed as ratios)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.engines import compare, decode_seconds, engine_stats, render_section
from bench.metrics import CallRecord, RunRecord


def _call(i: int, *, first: float, prefill: float, generate: float, tokens: int) -> CallRecord:
    return CallRecord(index=i, turn=i, phase="workload", kind="chat", prompt_tokens=500,
                      evaluated=100, completion_tokens=tokens, prefill_s=prefill,
                      generate_s=generate, first_token_s=first)


def test_both_engines_records_give_the_same_decode_time() -> None:
    # Embedded: prefill 0.4 s, first token at 0.45 s, generation (from the end of prefill,
    # first token included) 1.05 s: 1.0 s of decoding after the first token.
    embedded = _call(1, first=0.45, prefill=0.4, generate=1.05, tokens=21)
    # Server: its "prefill" is the time to the first token, generation starts there.
    server = _call(1, first=0.5, prefill=0.5, generate=1.0, tokens=21)
    assert decode_seconds(embedded) == pytest.approx(1.0)
    assert decode_seconds(server) == pytest.approx(1.0)


def test_ratios_and_the_report_section() -> None:
    def run(first: float, generate: float) -> RunRecord:
        r = RunRecord(workload="W1", strategy="policy", model="m", mode="local", window=1280)
        r.calls = [_call(i, first=first, prefill=first, generate=generate, tokens=11)
                   for i in range(4)]
        r.wall_s = 10.0
        return r

    cmp = compare(run(0.5, 1.0), run(0.6, 1.25), model="m.gguf", threads=2, counting="c")
    assert cmp.embedded.calls == cmp.server.calls == 4
    assert cmp.embedded.decode_tps_median == pytest.approx(10.0)
    assert cmp.server.decode_tps_median == pytest.approx(8.0)
    assert cmp.ttft_ratio == pytest.approx(1.2)
    assert cmp.tps_ratio == pytest.approx(0.8)
    text = render_section([cmp.to_json()])
    assert "| W1 | policy | 4 / 4 | 0.500 / 0.600 | **1.20** | 10.0 / 8.0 | **0.80** |" in text
    assert "--engine server" in text
    assert engine_stats(RunRecord("W1", "policy", "m", "local", 1), "x").calls == 0


def test_engine_server_refuses_the_scripted_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model", "scripted", "--engine", "server", "--workload", "W1"]) == 2
    assert "needs a model file" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.slow
# Bounded by work (W1's three quick turns on each engine, 24-token replies, three alternate
# calls each): about 400 s on 2 shared cores, but over the suite's 600 s hang guard at a load
# average of 8 since W1's quick window grew to 1,792 tokens.
@pytest.mark.timeout(1800)
def test_quick_w1_on_both_engines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "BENCHMARKS.md"
    assert main(["--quick", "--workload", "W1", "--strategy", "policy", "--engine", "server",
                 "--no-questions", "--no-micro", "--no-real-sessions", "--no-answers",
                 "--no-reuse-quality", "--threads", "2",
                 "--report", str(report), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["options"]["engine"] == "server"
    [cmp] = data["engines"]
    assert (cmp["workload"], cmp["strategy"], cmp["threads"]) == ("W1", "policy", 2)
    assert cmp["embedded"]["calls"] > 0 and cmp["server"]["calls"] > 0
    assert cmp["ttft_ratio"] > 0 and cmp["tps_ratio"] > 0
    assert "/extras/tokenize" in cmp["counting"]
    assert cmp["interleaved"]["reps"] == 3
    assert cmp["interleaved"]["tps_ratio"] > 0
    text = report.read_text(encoding="utf-8")
    assert "### Engines: embedded vs. a local OpenAI-compatible server" in text
    assert "| W1 | policy |" in text
    assert "The same prompts on both engines, alternately" in text
    saved = json.loads((tmp_path / "bench" / "results-quick.json").read_text(encoding="utf-8"))
    assert saved["engines"] == data["engines"]

