"""Embedded engine vs. server engine: what the HTTP path costs per model call.

``python -m bench --engine server`` runs one workload/strategy pair (W1 with the
policy when they are in the run) twice: in this process through llama.cpp (the embedded
engine, as every run does) and through
llama-cpp-python's OpenAI-compatible server on 127.0.0.1 (:class:`~bench.
local_server.LocalServer`), started with the same model file, window and threads and driven
by the app's server engine (:class:`~assistant.llm.openai_backend.ServerBackend`, the same
sampler settings). The runs happen one after the other, never at the same time.

Per chat call (workload and end-of-run questions, calls that produced at least two tokens):

* **TTFT**: from the call to its first token: prompt evaluation, plus for the server the
  request, its JSON, the server's own template and tokenization, and the first streamed event;
* **decode speed**: tokens after the first per second after the first (both engines measured
  the same way, so the ratio shows what streaming over HTTP costs per token).

The report gives the medians and the ratios server / embedded (TTFT above 1 and speed below 1
are the overhead). The two runs can differ in what the model writes (a summary that comes out
longer on one engine changes every later prompt), so each engine's median prompt size is shown
beside them, and a second, controlled measurement (:func:`interleaved_calls`) sends the same
prompts to both engines alternately: one shared cached prefix, a new question each time, a
reply of a fixed length; its ratios isolate the HTTP path from what the workload did.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assistant.llm.base import GenerationOptions, LLMBackend
from assistant.llm.openai_backend import ServerBackend, ServerConfig
from bench.local_server import LocalServer

from .metrics import CallRecord, RunRecord, median
from .runner import RunOptions, run_workload
from .strategies import StrategyName
from .workloads import Workload

log = logging.getLogger("bench")


@dataclass
class EngineStats:
    """One engine's chat calls in one run."""

    engine: str
    calls: int
    ttft_median_s: float | None
    decode_tps_median: float | None
    prompt_tokens_median: float | None
    evaluated_median: float | None
    wall_s: float


@dataclass
class EngineComparison:
    workload: str
    strategy: str
    model: str
    window: int
    threads: int
    embedded: EngineStats
    server: EngineStats
    #: How the server engine counted (and whether that was checked exact).
    counting: str = ""
    notes: list[str] = field(default_factory=list)
    #: :func:`interleaved_calls`: the same prompts on both engines, alternately.
    interleaved: dict[str, Any] = field(default_factory=dict)

    @property
    def ttft_ratio(self) -> float | None:
        return _ratio(self.server.ttft_median_s, self.embedded.ttft_median_s)

    @property
    def tps_ratio(self) -> float | None:
        return _ratio(self.server.decode_tps_median, self.embedded.decode_tps_median)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ttft_ratio"] = self.ttft_ratio
        data["tps_ratio"] = self.tps_ratio
        return data


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def decode_seconds(call: CallRecord) -> float | None:
    """Seconds from the first token to the last (both engines' records allow it: the
    embedded engine's ``generate_s`` starts after prefill, before the first token; the
    server's starts at the first token and its ``prefill_s`` is the time to it)."""
    if call.first_token_s is None:
        return None
    return _decode(call.first_token_s, call.prefill_s, call.generate_s)


def engine_stats(run: RunRecord, engine: str) -> EngineStats:
    chat = [c for c in run.calls if c.kind == "chat" and not c.overflowed]
    timed = [c for c in chat if c.completion_tokens >= 2 and c.first_token_s is not None]
    tps: list[float] = []
    for c in timed:
        seconds = decode_seconds(c)
        if seconds:
            tps.append((c.completion_tokens - 1) / seconds)
    return EngineStats(
        engine=engine,
        calls=len(timed),
        ttft_median_s=median([c.first_token_s for c in timed if c.first_token_s is not None]),
        decode_tps_median=median(tps),
        prompt_tokens_median=median([float(c.prompt_tokens) for c in chat]),
        evaluated_median=median([float(c.evaluated) for c in chat]),
        wall_s=run.wall_s,
    )


@dataclass
class ServerRun:
    run: RunRecord
    counting: str
    interleaved: dict[str, Any]


def run_on_server(
    model_path: Path,
    workload: Workload,
    strategy: StrategyName,
    options: RunOptions,
    *,
    n_ctx: int,
    threads: int,
    embedded: LLMBackend | None = None,
    reps: int = 5,
    log_path: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> ServerRun:
    """The workload through the server engine on a fresh local server (stopped after), then
    (with ``embedded``) :func:`interleaved_calls` on both engines."""
    with LocalServer(model_path, n_ctx=n_ctx, threads=threads, log_path=log_path) as server:
        if progress:
            progress(f"local server for {model_path.name} at {server.url} (n_ctx {n_ctx})")
        backend = ServerBackend.connect(
            ServerConfig(server.url, window=n_ctx, timeout_s=600, seed=0)
        )
        try:
            counting = backend.report().counting
            run = run_workload(backend, workload, strategy, options=options,
                               model_label=f"{model_path.name} (server)")
            inter: dict[str, Any] = {}
            if embedded is not None and reps > 0:
                if progress:
                    progress(f"the same prompts on both engines, {reps} times each ...")
                inter = interleaved_calls(embedded, backend, reps=reps, window=n_ctx)
        finally:
            backend.close()
    return ServerRun(run, counting, inter)


#: Seconds between two timed calls of the interleaved measurement.
PAUSE_S = 0.5
#: A shared prefix both engines cache, then one short new question per call.
_CONTEXT = " ".join(
    f"Station {i} records {i * 7 % 50 + 10} millimetres of rain in week {i % 52 + 1}."
    for i in range(40)
)


def interleaved_calls(
    embedded: LLMBackend, server: LLMBackend, *, reps: int = 5, window: int = 1280,
    reply_tokens: int = 32,
) -> dict[str, Any]:
    """The same prompts on both engines, alternately: TTFT and decode speed per call.

    Each engine first evaluates the shared prefix once (not timed); each timed call then
    adds a new question, so both evaluate the same few new tokens and write a reply of up to
    ``reply_tokens`` (greedy, a counting task that runs to the limit). Times are taken around
    ``generate`` itself (to the first streamed text, and from it to the end), so they hold
    everything the app waits for on either engine. The engine that goes first alternates.
    """
    def messages(i: int, context: str) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": context},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": f"Question {i}: count from {i} upwards, one number "
                                        "per line, and do not stop."},
        ]

    context = _CONTEXT
    while embedded.count_prompt(messages(0, context)) + reply_tokens >= window:
        if len(context) < 200:
            break
        context = context[: len(context) * 3 // 4]
    options = GenerationOptions(max_tokens=reply_tokens, temperature=0.0)
    timed: dict[str, list[tuple[float, float | None, int]]] = {"embedded": [], "server": []}
    engines = [("embedded", embedded), ("server", server)]
    for i in range(reps + 1):  # call 0 warms both caches with the shared prefix
        # Which engine goes first alternates, and each call starts after a short pause, so
        # neither pays for what the other is still finishing (a server writing its log).
        for name, backend in engines if i % 2 == 0 else engines[::-1]:
            time.sleep(PAUSE_S)
            # Timed from the call itself: all the work the app waits for on either engine.
            start = time.perf_counter()
            first: float | None = None
            result = None
            for event in backend.generate(messages(i + 1, context), options):
                if event.delta and first is None:
                    first = time.perf_counter()
                result = event.result or result
            end = time.perf_counter()
            if i == 0 or result is None or first is None:
                continue
            tps = (result.completion_tokens - 1) / (end - first) if (
                result.completion_tokens > 1 and end > first) else None
            timed[name].append((first - start, tps, result.prompt_tokens))
    out: dict[str, Any] = {"reps": reps, "reply_tokens": reply_tokens}
    for name, rows in timed.items():
        out[name] = {
            "ttft_median_s": median([r[0] for r in rows]),
            "decode_tps_median": median([r[1] for r in rows if r[1] is not None]),
            "prompt_tokens": rows[0][2] if rows else 0,
        }
    e, s = out["embedded"], out["server"]
    out["ttft_ratio"] = _ratio(s["ttft_median_s"], e["ttft_median_s"])
    out["tps_ratio"] = _ratio(s["decode_tps_median"], e["decode_tps_median"])
    if s["ttft_median_s"] is not None and e["ttft_median_s"] is not None:
        out["ttft_overhead_ms"] = (s["ttft_median_s"] - e["ttft_median_s"]) * 1000.0
    return out


def _decode(first: float, prefill: float, generate: float) -> float | None:
    seconds = generate - (first - prefill)
    return seconds if seconds > 0 else None


def compare(
    embedded: RunRecord,
    server: RunRecord,
    *,
    model: str,
    threads: int,
    counting: str,
    interleaved: dict[str, Any] | None = None,
) -> EngineComparison:
    out = EngineComparison(
        workload=embedded.workload, strategy=embedded.strategy, model=model,
        window=embedded.window, threads=threads,
        embedded=engine_stats(embedded, "embedded"), server=engine_stats(server, "server"),
        counting=counting, interleaved=dict(interleaved or {}),
    )
    if out.server.calls < 3 or out.embedded.calls < 3:
        out.notes.append("Few timed calls: a quick run gives a rough ratio only.")
    over = sum(1 for c in server.calls if c.overflowed)
    if over:
        out.notes.append(f"{over} server call(s) overflowed (the server reported it).")
    return out


def _fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "–" if value is None else f"{value:.{digits}f}{suffix}"


def render_section(comparisons: Sequence[dict[str, Any]]) -> str:
    """The report's section (from :meth:`EngineComparison.to_json` values)."""
    if not comparisons:
        return ""
    rows = []
    for c in comparisons:
        e, s = c["embedded"], c["server"]
        rows.append(
            f"| {c['workload']} | {c['strategy']} | {e['calls']} / {s['calls']} "
            f"| {_fmt(e['ttft_median_s'], 3)} / {_fmt(s['ttft_median_s'], 3)} "
            f"| **{_fmt(c['ttft_ratio'])}** "
            f"| {_fmt(e['decode_tps_median'], 1)} / {_fmt(s['decode_tps_median'], 1)} "
            f"| **{_fmt(c['tps_ratio'])}** "
            f"| {_fmt(e['prompt_tokens_median'], 0)} / {_fmt(s['prompt_tokens_median'], 0)} "
            f"| {_fmt(e['wall_s'], 0, ' s')} / {_fmt(s['wall_s'], 0, ' s')} |"
        )
    first = comparisons[0]
    lines = [
        "### Engines: embedded vs. a local OpenAI-compatible server",
        f"The same runs through llama.cpp in this process and through llama-cpp-python's "
        f"server on 127.0.0.1 with the same model ({first['model']}), window and "
        f"{first['threads']} threads, one after the other; the server engine counted with "
        f"{first['counting']}. Values are embedded / server over the chat calls; the ratios "
        "are server / embedded (TTFT above 1 and decode speed below 1 are what the HTTP "
        "path costs). Repeat with `python -m bench --workload W1 --strategy policy "
        "--engine server` (add `--quick` for a few-minute run).",
        "",
        "| workload | strategy | timed calls | TTFT median (s) | TTFT ratio "
        "| decode tok/s median | speed ratio | prompt median (tokens) | wall |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    inter = [c for c in comparisons if c.get("interleaved")]
    if inter:
        lines += [
            "",
            "The same prompts on both engines, alternately (a cached shared prefix, a new "
            "question each call, a reply of a fixed length):",
            "",
            "| workload | calls per engine | prompt (tokens) | TTFT median (s) | TTFT ratio "
            "| HTTP cost per call | decode tok/s median | speed ratio |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c in inter:
            i = c["interleaved"]
            e, s = i["embedded"], i["server"]
            lines.append(
                f"| {c['workload']} | {i['reps']} | {e['prompt_tokens']} "
                f"| {_fmt(e['ttft_median_s'], 3)} / {_fmt(s['ttft_median_s'], 3)} "
                f"| **{_fmt(i['ttft_ratio'])}** | {_fmt(i.get('ttft_overhead_ms'), 0, ' ms')} "
                f"| {_fmt(e['decode_tps_median'], 1)} / {_fmt(s['decode_tps_median'], 1)} "
                f"| **{_fmt(i['tps_ratio'])}** |"
            )
    notes = [n for c in comparisons for n in c.get("notes", [])]
    if notes:
        lines += ["", *(f"- {n}" for n in dict.fromkeys(notes))]
    return "\n".join(lines)
