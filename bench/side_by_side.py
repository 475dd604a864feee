"""The app beside the engine users would pick instead (``python -m bench --side-by-side``).

One workload, one session, three ways, one after the other (never at the same time):

* **embedded**: the app's own engine (llama.cpp in this process) with the app's context
  policy (:mod:`assistant.compaction`), as every benchmark run does;
* **app -> llama-server**: the same policy driving llama.cpp's own ``llama-server`` through
  the app's server engine (:class:`~assistant.llm.openai_backend.ServerBackend`);
* **front cut -> llama-server --cache-reuse**: what chat front ends on ``llama-server``
  do (Open WebUI, LM Studio's rolling window, scripts): the whole history every time, the
  oldest messages cut when it no longer fits (:class:`~bench.strategies.FrontCut`), with
  the server's prompt cache and ``--cache-reuse`` keeping what it can of the cached text.

Each reports time to first token, prompt tokens evaluated and evaluated again
(:func:`bench.metrics.summarize`), the peak resident memory of the process that holds the
model (this process for the embedded engine, the server process for the others; both read
from ``VmHWM`` after resetting it) and the answers to the workload's planted-fact questions
asked at the end (:func:`accuracy`: small on purpose, to switch to bench/answers.py).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assistant.config import Settings
from assistant.llm.base import LLMError
from assistant.llm.local_server import LocalServer
from assistant.llm.openai_backend import ServerBackend, ServerConfig

from .metrics import RunRecord, summarize
from .runner import RunOptions, run_workload
from .strategies import StrategyName
from .workloads import Workload

#: llama-server's --cache-reuse chunk size for the front-cut baseline (tokens; llama.cpp's
#: server docs use 256 as the example value).
CACHE_REUSE = 256


@dataclass
class EngineRow:
    """One way of running the workload, summarized."""

    label: str
    strategy: str
    ttft_median_s: float | None
    ttft_p95_s: float | None
    evaluated: int
    reevaluated: int
    reeval_share: float | None
    peak_rss_mb: float
    answered: int
    asked: int
    overflowed: int
    wall_s: float
    cuts: int


def accuracy(run: RunRecord) -> tuple[int, int]:
    """(answered correctly, asked) over the planted-fact questions asked at the end."""
    asked = [f for f in run.facts if f.answered is not None]
    return sum(bool(f.answered) for f in asked), len(asked)


def _hwm_mb(pid: int | str) -> float:
    """Peak resident memory of a process (``VmHWM``), MiB; 0 if it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _reset_hwm(pid: int | str) -> None:
    """Start ``VmHWM`` again from the current resident size (Linux ``clear_refs`` 5)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def _row(label: str, run: RunRecord, peak_mb: float) -> EngineRow:
    s = summarize(run)
    answered, asked = accuracy(run)
    evaluated = sum(c.evaluated for c in run.calls if c.kind == "chat")
    return EngineRow(
        label=label, strategy=run.strategy, ttft_median_s=s.ttft_median_s,
        ttft_p95_s=s.ttft_p95_s, evaluated=evaluated, reevaluated=s.reevaluated,
        reeval_share=s.reeval_share, peak_rss_mb=peak_mb, answered=answered, asked=asked,
        overflowed=s.overflowed_calls, wall_s=run.wall_s, cuts=len(run.compactions),
    )


def window_for(wl: Workload) -> int:
    """The window the workload runs in (the mode's, capped as the benchmark caps it)."""
    n_ctx = Settings(mode=wl.mode).policy().window
    return min(n_ctx, wl.window_cap) if wl.window_cap is not None else n_ctx


def run(
    model: str,
    wl: Workload,
    options: RunOptions,
    *,
    llama_server: str,
    threads: int = 0,
    log_dir: Path,
    progress: Callable[[str], None] | None = None,
    errors: list[str] | None = None,
    wait_s: float = 0.0,
) -> list[EngineRow]:
    """The three runs of ``wl`` on ``model`` (a registry name or a GGUF path). A server run
    that fails is left out and described in ``errors``. ``wait_s``: how long the server
    runs wait for the binary to appear (``make llama-server`` building it meanwhile)."""
    errors = errors if errors is not None else []
    from assistant.llm.llama_backend import LlamaBackend
    from assistant.llm.registry import resolve_model

    path, _entry = resolve_model(model)
    n_ctx = window_for(wl)
    threads = threads or min(2, os.cpu_count() or 1)
    say = progress or (lambda _t: None)
    rows: list[EngineRow] = []

    say(f"side by side: {wl.name} on {path.name}, window {n_ctx}: embedded engine ...")
    backend = LlamaBackend.load(str(path), n_ctx=n_ctx, threads=threads, calibrate=True)
    try:
        _reset_hwm("self")
        run_rec = run_workload(backend, wl, "policy", options=options,
                               model_label=f"{path.name} (embedded)")
        rows.append(_row("embedded engine, app policy", run_rec, _hwm_mb("self")))
        say(f"side by side: {rows[-1]}")
    finally:
        backend.close()

    deadline = time.monotonic() + wait_s
    while not Path(llama_server).is_file() and time.monotonic() < deadline:
        say(f"side by side: waiting for {llama_server} (make llama-server) ...")
        time.sleep(min(30.0, max(0.0, deadline - time.monotonic())))
    # The front ends' way first: beside the embedded run it is the comparison users make.
    plans: list[tuple[str, StrategyName, tuple[str, ...]]] = [
        (f"llama-server --cache-reuse {CACHE_REUSE}, front cut", "front-cut",
         ("--cache-reuse", str(CACHE_REUSE))),
        ("llama-server, app policy", "policy", ()),
    ]
    for label, strategy, extra in plans:
        say(f"side by side: {label} ...")
        log = log_dir / f"llama-server-{strategy}.log"
        try:
            with LocalServer(path, n_ctx=n_ctx, threads=threads, log_path=log,
                             llama_server_bin=llama_server, extra_args=extra) as server:
                server_backend = ServerBackend.connect(
                    ServerConfig(server.url, window=n_ctx, timeout_s=600, seed=0)
                )
                try:
                    assert server.pid is not None
                    _reset_hwm(server.pid)
                    run_rec = run_workload(server_backend, wl, strategy, options=options,
                                           model_label=f"{path.name} ({label})")
                    rows.append(_row(label, run_rec, _hwm_mb(server.pid)))
                    say(f"side by side: {rows[-1]}")
                finally:
                    server_backend.close()
        except (LLMError, OSError) as exc:  # the rows so far count; the table says what failed
            say(f"side by side: {label} failed: {exc}")
            errors.append(f"{label}: {exc}")
    return rows


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(rows: list[EngineRow], wl: Workload, command: str,
           errors: list[str] | None = None) -> str:
    """The side-by-side table (markdown), and the runs that failed."""
    lines = [
        "### The app beside llama-server",
        "",
        f"`{command}`: {wl.name} ({wl.mode} mode, window {window_for(wl):,}), the same "
        "model and threads, one run after the other. Peak memory is the process holding "
        "the model (this one, or the server). Answers: planted-fact questions asked at "
        "the end.",
        "",
        "| engine and context | TTFT median / p95 s | prompt tokens evaluated | evaluated "
        "again | cuts or compactions | overflowed calls | peak RSS MiB | answers | wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        share = f" ({r.reeval_share:.1%})" if r.reeval_share is not None else ""
        lines.append(
            f"| {r.label} | {_s(r.ttft_median_s)} / {_s(r.ttft_p95_s)} | {r.evaluated:,} | "
            f"{r.reevaluated:,}{share} | {r.cuts} | {r.overflowed} | {r.peak_rss_mb:,.0f} | "
            f"{r.answered}/{r.asked} | {r.wall_s:,.0f} |"
        )
    lines += [f"\nNot measured: {e}" for e in errors or []]
    return "\n".join(lines) + "\n"


def to_json(rows: list[EngineRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
