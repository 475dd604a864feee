"""Prefill settings (threads, ``n_ubatch``, ``n_batch``) timed on the user's machine at a
model's first load and kept, keyed by model file, CPU and llama.cpp build (docs/PERFORMANCE.md,
"Prefill at raw speed"). Each trial is a raw ``llama_decode`` in a temporary context
(:func:`~assistant.llm.llama_kv.measure_prefill`), so the chat's cache is never disturbed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from assistant import paths
from assistant.atomicfile import JsonStore
from assistant.llm.llama_kv import PrefillConfig, llama_cpp_version, measure_prefill

log = logging.getLogger(__name__)

#: The llama.cpp defaults the app used before calibration (and uses when it is off).
DEFAULT_BATCH = 512
DEFAULT_UBATCH = 512
#: Seconds a first-load calibration may take (a slow model measures fewer tokens).
BUDGET_S = 12.0
#: A candidate must beat the default by this much to replace it (timings are noisy).
MIN_GAIN = 0.03
#: A thread count other than the CPU's cores must be this much faster, twice: a moment of
#: another program's load can make fewer threads look faster, and the choice is kept.
THREADS_MARGIN = 0.25
#: Busy: a 1-minute load of at least this many runnable threads per CPU. Timings then measure
#: other programs too: the thread count stays the cores', measured again when idle.
BUSY_LOAD = 1.0
#: A thread count below the cores' is kept only while the load per CPU stays within this of
#: the load it was measured under: fewer threads win only against other programs' load, and
#: that load changes (the choice is then measured again at the next model load).
LOAD_CHANGE = 0.5

def machine_load() -> float:
    """Runnable threads per CPU over the last minute (0.0 where unknown)."""
    try:
        return os.getloadavg()[0] / max(1, logical_cpus())
    except (AttributeError, OSError):  # pragma: no cover - not Unix
        return 0.0


def logical_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def physical_cores() -> int:
    """Cores (not hyper-threads) this process may run on; the logical count if unknown."""
    allowed: list[int] = list(range(os.cpu_count() or 1))
    with contextlib.suppress(AttributeError, OSError):
        allowed = sorted(os.sched_getaffinity(0))
    cores: set[tuple[str, str]] = set()
    for cpu in allowed:
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            package = (topo / "physical_package_id").read_text().strip()
            cores.add((package, (topo / "core_id").read_text().strip()))
        except OSError:
            return logical_cpus()
    return len(cores) or logical_cpus()


def thread_candidates() -> list[int]:
    """Thread counts worth timing, the likeliest first: physical cores, all logical CPUs,
    one core left free, half the cores."""
    physical, logical = physical_cores(), logical_cpus()
    out: list[int] = []
    for n in (physical, logical, physical - 1 if physical >= 3 else 0, physical // 2):
        if n >= 1 and n not in out:
            out.append(n)
    return out


def default_config(threads: int = 0) -> PrefillConfig:
    return PrefillConfig(threads or physical_cores(), DEFAULT_BATCH, DEFAULT_UBATCH)


def cpu_signature() -> str:
    name = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import platform

    return f"{name or platform.processor() or platform.machine()}|{logical_cpus()}|" \
        f"{physical_cores()}"


def probe_tokens(llm: Any, count: int, seed: int = 0) -> list[int]:
    """``count`` ordinary tokens of the vocabulary (seeded: trials stay comparable)."""
    n_vocab = int(llm.n_vocab())
    rng = random.Random(seed)
    low = min(100, n_vocab // 4)
    return [rng.randrange(low, n_vocab - 1) for _ in range(count)]


@dataclass
class Calibration:
    """What a calibration measured and chose."""

    config: PrefillConfig
    tokens_per_s: float
    default_tokens_per_s: float
    prompt_tokens: int
    seconds: float
    #: Every trial: (threads, n_batch, n_ubatch, tokens per second).
    trials: list[tuple[int, int, int, float]] = field(default_factory=list)
    #: The machine's load per CPU when it was measured (see :data:`BUSY_LOAD`).
    load: float = 0.0
    #: Why the thread count is what it is, in words (the settings show it).
    threads_note: str = ""
    #: The thread count tried as the CPU's cores (0: kept before it was recorded).
    cores: int = 0

    @property
    def busy(self) -> bool:
        """Measured while other programs kept the CPUs busy (measured again when idle)."""
        return self.load >= BUSY_LOAD


#: Calibrations to and from their JSON form (checked: a damaged entry is measured again).
_JSON = TypeAdapter(Calibration)


def calibrate(
    llm: Any,
    *,
    budget_s: float = BUDGET_S,
    max_tokens: int = 512,
    threads: int = 0,
    load: float | None = None,
) -> Calibration:
    """Time candidate prefill settings on ``llm``'s model and return the fastest.

    A 64-token warm-up (paging the weights in) sizes the trials to the budget. Every thread
    count is tried (``threads`` > 0 fixes it), the batch sizes while the budget lasts.
    """
    measured_load = load is None
    load = machine_load() if load is None else load
    started = time.perf_counter()
    cands = [threads] if threads > 0 else thread_candidates()
    default = PrefillConfig(cands[0], DEFAULT_BATCH, DEFAULT_UBATCH)
    warm = measure_prefill(llm, default, probe_tokens(llm, 64, seed=1))
    planned = len(cands) + 3
    left = max(0.5, budget_s - (time.perf_counter() - started))
    n = int(warm * left / planned) // 64 * 64
    n = max(64, min(max_tokens, n))
    tokens = probe_tokens(llm, n)
    results: dict[PrefillConfig, float] = {}

    def trial(cfg: PrefillConfig, always: bool = False) -> None:
        if cfg in results:
            return
        if not always and time.perf_counter() - started > budget_s:
            return
        try:
            results[cfg] = measure_prefill(llm, cfg, tokens)
        except RuntimeError as exc:
            log.warning("prefill trial %s failed: %s", cfg.describe(), exc)

    for t in cands:  # the choice that matters most: measured even past the budget
        trial(PrefillConfig(t, DEFAULT_BATCH, DEFAULT_UBATCH), always=True)
    rechecks: list[tuple[PrefillConfig, float]] = []

    def again(cfg: PrefillConfig) -> float:
        try:
            value = measure_prefill(llm, cfg, tokens)
        except RuntimeError:
            return 0.0
        rechecks.append((cfg, value))
        return value

    if measured_load:  # the 1-minute average lags: the load may have risen meanwhile
        load = max(load, machine_load())
    best_threads, threads_note = _pick_threads(results, default, again, load)
    for ub in (256, 128):
        if ub < n:
            trial(PrefillConfig(best_threads, DEFAULT_BATCH, ub))
    if results:
        best = max(results, key=lambda c: results[c])
        if best.n_batch != best.n_ubatch and n > best.n_ubatch:
            trial(PrefillConfig(best.threads, best.n_ubatch, best.n_ubatch))
    default_tps = results.get(default, 0.0)
    base = PrefillConfig(best_threads, DEFAULT_BATCH, DEFAULT_UBATCH)
    chosen = base
    mine = {c: v for c, v in results.items() if c.threads == best_threads}
    if mine:
        best = max(mine, key=lambda c: mine[c])
        if mine[best] > mine.get(base, 0.0) * (1 + MIN_GAIN):
            chosen = best
    trials = [(c.threads, c.n_batch, c.n_ubatch, round(v, 2)) for c, v in results.items()]
    trials += [(c.threads, c.n_batch, c.n_ubatch, round(v, 2)) for c, v in rechecks]
    return Calibration(
        config=chosen,
        tokens_per_s=results.get(chosen, warm),
        default_tokens_per_s=default_tps,
        prompt_tokens=n,
        seconds=time.perf_counter() - started,
        trials=trials,
        load=round(load, 2),
        threads_note=threads_note,
        cores=default.threads,
    )


def _pick_threads(
    results: dict[PrefillConfig, float],
    default: PrefillConfig,
    again: Callable[[PrefillConfig], float],
    load: float,
) -> tuple[int, str]:
    """The thread count to keep and why (see :data:`THREADS_MARGIN`, :data:`BUSY_LOAD`)."""
    cores = default.threads
    others = [c for c in results if c.threads != cores]
    if default not in results or not others:
        return cores, f"{cores} (the CPU's cores)"
    challenger = max(others, key=lambda c: results[c])
    if results[challenger] < results[default] * (1 + THREADS_MARGIN):
        return cores, f"{cores} (the CPU's cores; no other count was clearly faster)"
    if load >= BUSY_LOAD:
        return cores, (
            f"{cores} (the CPU's cores: the machine was busy while measuring, load "
            f"{load:.1f} per CPU, so {challenger.threads} looked faster; measured again "
            "when it is idle)"
        )
    if again(challenger) < again(default) * (1 + THREADS_MARGIN):
        return cores, f"{cores} (the CPU's cores; {challenger.threads} was not faster twice)"
    return challenger.threads, (
        f"{challenger.threads} (measured clearly faster than {cores}, twice)"
    )


def calibration_key(model_path: Path, flash_attn: bool) -> str:
    """Which calibration fits: the model file (name, size, time), the CPU, llama.cpp."""
    try:
        st = model_path.stat()
        file_id = f"{model_path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:
        file_id = str(model_path)
    return f"{file_id}|{cpu_signature()}|{llama_cpp_version()}|flash={int(flash_attn)}"


class CalibrationStore(JsonStore):
    """Calibrations in one JSON file (``calibration.json`` in the cache directory)."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(path or paths.cache_dir() / "calibration.json")

    def get(self, key: str, *, load: float | None = None) -> Calibration | None:
        """The kept calibration, or None (measure again): none, one made busy (or before
        the thread rule) while the machine is idle now, or one that chose fewer threads than
        the cores under another load than now's (:data:`LOAD_CHANGE`)."""
        raw = self.read().get(key)
        if not isinstance(raw, dict) or "threads_note" not in raw:
            return None  # none, or made before the thread rule (it may hold a busy moment)
        try:
            got = _JSON.validate_python(raw)
        except ValueError:
            return None
        now = machine_load() if load is None else load
        if got.busy and now < BUSY_LOAD:
            return None
        fewer = got.config.threads < got.cores or (not got.cores and got.config.threads == 1
                                                    and physical_cores() > 1)
        if fewer and abs(now - got.load) >= LOAD_CHANGE:
            return None
        return got

    def put(self, key: str, calibration: Calibration) -> None:
        self.put_json(key, _JSON.dump_python(calibration, mode="json"))

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
