"""Prefill settings measured on the first load, kept, and overridable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assistant import paths
from assistant.llm import calibration, llama_backend
from assistant.llm.base import EngineTuning
from assistant.llm.calibration import (
    Calibration,
    CalibrationStore,
    logical_cpus,
    physical_cores,
    thread_candidates,
)
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.llama_kv import PrefillConfig


def test_thread_candidates_start_with_the_physical_cores() -> None:
    cands = thread_candidates()
    assert cands[0] == physical_cores() <= logical_cpus()
    assert len(cands) == len(set(cands)) and all(c >= 1 for c in cands)


def test_the_store_keeps_calibrations_by_key(tmp_path: Path) -> None:
    store = CalibrationStore(tmp_path / "cal.json")
    assert store.get("k") is None
    cal = Calibration(PrefillConfig(2, 512, 256), 150.0, 140.0, 256, 3.5,
                      [(2, 512, 512, 140.0), (2, 512, 256, 150.0)], threads_note="2 (cores)")
    store.put("k", cal)
    store.put("other", cal)
    assert store.get("k") == cal
    (tmp_path / "cal.json").write_text("{not json")
    assert store.get("k") is None  # a damaged file is measured again, not an error
    store.clear()
    assert not (tmp_path / "cal.json").exists()


def test_prefill_config_keeps_ubatch_within_batch() -> None:
    assert PrefillConfig(2, 128, 512).n_ubatch == 128
    with pytest.raises(ValueError):
        PrefillConfig(0, 512, 512)


@pytest.mark.integration
def test_first_load_measures_later_loads_reuse_it(
    embedded_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_CALIBRATE", "1")
    # One machine state for the whole test: a calibration measured while another test kept
    # the CPUs busy is measured again once they are idle (tested below), which is not this.
    monkeypatch.setattr(calibration, "machine_load", lambda: 0.0)
    first = LlamaBackend.load(str(embedded_model_path), n_ctx=2048, calibrate=True)
    try:
        cal = first.calibration
        assert cal is not None and len(cal.trials) >= 2
        assert 64 <= cal.prompt_tokens <= 512 and cal.tokens_per_s > 0
        assert first.prefill_config == cal.config
        assert (paths.cache_dir() / "calibration.json").exists()
    finally:
        first.close()

    def measured_again(*_args: Any, **_kwargs: Any) -> Calibration:
        raise AssertionError("the kept calibration should have been used")

    monkeypatch.setattr(llama_backend, "run_calibration", measured_again)
    second = LlamaBackend.load(str(embedded_model_path), n_ctx=2048, calibrate=True)
    try:
        assert second.calibration == cal
        assert second.prefill_config == cal.config
        assert "(measured)" in second.describe_tuning()
        # Settings override single values: a new context with them.
        text = second.tune(EngineTuning(n_batch=256, n_ubatch=64, threads=1))
        assert second.prefill_config == PrefillConfig(1, 256, 64)
        assert "1 threads, n_batch 256, n_ubatch 64 (set)" in text
        msgs = [{"role": "user", "content": "Say hello."}]
        from assistant.llm.base import GenerationOptions

        result = None
        for event in second.generate(msgs, GenerationOptions(4, temperature=0.0)):
            result = event.result or result
        assert result is not None and result.completion_tokens > 0
        second.tune(EngineTuning())
        assert second.prefill_config == cal.config
    finally:
        second.close()
    # Fixed overrides at load skip nothing else: only the rest comes from the calibration.
    third = LlamaBackend.load(str(embedded_model_path), n_ctx=2048, calibrate=True, n_batch=128)
    try:
        assert third.prefill_config.n_batch == 128
        assert third.prefill_config.threads == cal.config.threads
    finally:
        third.close()


class _Model:
    """What calibrate needs of a model besides the timing: its vocabulary size."""

    def n_vocab(self) -> int:
        return 1000


def _timed(rates: dict[int, list[float]]):  # type: ignore[no-untyped-def]
    """A measure function: tokens per second by thread count, one value per call in turn
    (the last repeats); batch sizes do not matter."""
    calls: dict[int, int] = {}

    def measure(_llm: Any, cfg: PrefillConfig, _tokens: list[int]) -> float:
        seq = rates[cfg.threads]
        i = calls.get(cfg.threads, 0)
        calls[cfg.threads] = i + 1
        return seq[min(i, len(seq) - 1)]

    return measure


def _calibrate(
    monkeypatch: pytest.MonkeyPatch, rates: dict[int, list[float]], load: float
) -> Calibration:
    from assistant.llm.calibration import calibrate

    monkeypatch.setattr(calibration, "measure_prefill", _timed(rates))
    return calibrate(_Model(), budget_s=0.5, max_tokens=64, load=load)


def test_under_load_the_thread_count_stays_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from assistant.llm import calibration

    monkeypatch.setattr(calibration, "thread_candidates", lambda: [2, 1])
    # the numbers a loaded 2-core machine gave: 2 threads 5 tok/s, 1 thread 45 tok/s
    cal = _calibrate(monkeypatch, {2: [5.0], 1: [45.0]}, load=6.8)
    assert cal.config.threads == 2 and cal.busy
    assert "busy" in cal.threads_note
    # kept while the machine stays busy; measured again once it is idle
    store = CalibrationStore(paths.cache_dir() / "cal-test.json")
    store.put("k", cal)
    assert store.get("k", load=3.0) == cal
    assert store.get("k", load=0.2) is None


def test_fewer_threads_must_win_clearly_and_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    from assistant.llm import calibration

    monkeypatch.setattr(calibration, "thread_candidates", lambda: [2, 1])
    # a little faster: not enough
    assert _calibrate(monkeypatch, {2: [100.0], 1: [110.0]}, load=0.1).config.threads == 2
    # clearly faster once, then not: a moment's noise
    cal = _calibrate(monkeypatch, {2: [100.0, 100.0], 1: [150.0, 101.0]}, load=0.1)
    assert cal.config.threads == 2 and "not faster twice" in cal.threads_note
    # clearly faster twice on an idle machine: kept
    cal = _calibrate(monkeypatch, {2: [100.0, 100.0], 1: [150.0, 160.0]}, load=0.1)
    assert cal.config.threads == 1 and "twice" in cal.threads_note
    assert not cal.busy


def test_a_calibration_kept_before_the_thread_rule_is_measured_again(tmp_path: Path) -> None:
    import json

    store = CalibrationStore(tmp_path / "cal.json")
    old = {"config": {"threads": 1, "n_batch": 512, "n_ubatch": 512}, "tokens_per_s": 45.2,
           "default_tokens_per_s": 4.96, "prompt_tokens": 64, "seconds": 38.4,
           "trials": [[2, 512, 512, 4.96], [1, 512, 512, 45.21]]}
    (tmp_path / "cal.json").write_text(json.dumps({"k": old}))
    assert store.get("k", load=0.1) is None


def test_fewer_threads_are_measured_again_when_the_load_changes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One thread won twice against another program's load on an idle-looking machine: the
    choice holds only while the load stays as it was; the next load under another load
    measures again (issue 44: it chose 1 thread under load and kept it)."""
    from assistant.llm import calibration

    monkeypatch.setattr(calibration, "thread_candidates", lambda: [2, 1])
    cal = _calibrate(monkeypatch, {2: [100.0, 100.0], 1: [150.0, 160.0]}, load=0.2)
    assert cal.config.threads == 1 and cal.cores == 2
    store = CalibrationStore(tmp_path / "cal.json")
    store.put("k", cal)
    assert store.get("k", load=0.4) == cal
    assert store.get("k", load=0.9) is None  # busier now
    cal.load = 0.9
    store.put("k", cal)
    assert store.get("k", load=0.2) is None  # quieter now
    # The cores' count is kept whatever the load does.
    cores = _calibrate(monkeypatch, {2: [100.0], 1: [101.0]}, load=0.2)
    store.put("c", cores)
    assert store.get("c", load=0.95) == cores


def test_the_load_after_the_trials_counts_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1-minute load average lags: a machine that got busy during the trials is busy."""
    from assistant.llm import calibration
    from assistant.llm.calibration import calibrate

    loads = iter([0.3, 2.5])
    monkeypatch.setattr(calibration, "machine_load", lambda: next(loads))
    monkeypatch.setattr(calibration, "thread_candidates", lambda: [2, 1])
    monkeypatch.setattr(calibration, "measure_prefill", _timed({2: [5.0], 1: [45.0]}))
    cal = calibrate(_Model(), budget_s=0.5, max_tokens=64)
    assert cal.busy and cal.load == 2.5
    assert cal.config.threads == 2 and "busy" in cal.threads_note
