# Over 500 lines: one writer for every section and plot of docs/BENCHMARKS.md.
"""The benchmark report: ``docs/BENCHMARKS.md`` with tables and PNG plots, plus JSON.

:class:`BenchResult` is everything one ``assistant bench`` invocation measured.
:func:`write_report` writes the markdown and, in ``<report dir>/bench/``, three plots per
workload (context tokens per call, prefill tokens per call, time per turn, named
``KIND_wN_METRIC.png`` with KIND ``full`` or ``quick``) and ``results-KIND.json`` (every
record; :func:`from_json` reads it back so saved runs can be re-rendered, also several into
one report). :func:`to_json` gives the summaries for ``--json``.

Why it is long (about 570 lines): it is the one place that turns results into the report's
tables, targets and plots, and its JSON round trip; each part is a short function over the
same :class:`BenchResult`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assistant.config import Mode, default_local

from . import perf_report
from .answers import TranscriptRun
from .answers_report import run_from_json, run_to_json
from .answers_report import section as answers_section
from .engines import render_section as render_engine_section
from .metrics import (
    CallRecord,
    CompactionStat,
    FactResult,
    PruneStat,
    RunRecord,
    Summary,
    TurnRecord,
    summarize,
)
from .real_sessions import RealSessionResult
from .strategies import LABELS, STRATEGY_NAMES
from .workloads import QUICK_LOCAL_WINDOW, QUICK_STANDARD_WINDOW

STYLES: dict[str, tuple[str, float]] = {
    "policy": ("-", 2.0),
    "summarize-only": ("--", 1.3),
    "prune-only": (":", 1.8),
    "drop-half": ("-.", 1.3),
    "none": ("-", 0.9),
}
COLORS: dict[str, str] = {
    "policy": "#1f77b4",
    "summarize-only": "#ff7f0e",
    "prune-only": "#2ca02c",
    "drop-half": "#9467bd",
    "none": "#d62728",
}


@dataclass
class WorkloadInfo:
    name: str
    title: str
    mode: str
    model: str
    window: int
    chat_turns: int
    tool_steps: int
    facts: int
    jsonl: str = ""


@dataclass
class BenchResult:
    """One invocation: what ran, on what, and every run's records."""

    command: str
    started: str
    quick: bool
    seed: int
    machine: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    workloads: list[WorkloadInfo] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    speed: dict[str, Any] | None = None
    policy_time: dict[str, Any] | None = None
    summary_time: dict[str, Any] | None = None
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    real_sessions: list[RealSessionResult] = field(default_factory=list)
    #: Prompt evaluation (issue 14): ``prefill``, ``resume``, ``reuse_quality``
    #: (see :mod:`bench.perf_report`).
    perf: dict[str, Any] = field(default_factory=dict)
    #: ``--engine server``: embedded vs. local server (``EngineComparison.to_json()``).
    engines: list[dict[str, Any]] = field(default_factory=list)
    #: The answer benchmark (:mod:`bench.answers`): one entry per transcript and model.
    answers: list[TranscriptRun] = field(default_factory=list)

    def summaries(self) -> list[Summary]:
        return [summarize(r) for r in self.runs]

    def run(self, workload: str, strategy: str) -> RunRecord | None:
        for r in self.runs:
            if r.workload == workload and r.strategy == strategy:
                return r
        return None


def to_json(result: BenchResult, *, records: bool = False) -> dict[str, Any]:
    """JSON-ready data: summaries and targets, and with ``records`` every call and turn."""
    data: dict[str, Any] = {
        "command": result.command,
        "started": result.started,
        "quick": result.quick,
        "seed": result.seed,
        "machine": result.machine,
        "options": result.options,
        "workloads": [asdict(w) for w in result.workloads],
        "summaries": [asdict(s) for s in result.summaries()],
        "targets": [asdict(t) for t in targets(result)],
        "speed": result.speed,
        "policy_time": result.policy_time,
        "summary_time": result.summary_time,
        "wall_s": round(result.wall_s, 1),
        "notes": result.notes,
        "real_sessions": [asdict(r) for r in result.real_sessions],
        "perf": result.perf,
        "engines": result.engines,
        "answers": [run_to_json(a) for a in result.answers],
    }
    if records:
        data["runs"] = [asdict(r) for r in result.runs]
    return data


def from_json(data: dict[str, Any]) -> BenchResult:
    """A :class:`BenchResult` back from ``to_json(result, records=True)`` (re-rendering a
    report without running again)."""
    runs = []
    for raw in data.get("runs", []):
        run = RunRecord(**{k: v for k, v in raw.items() if k not in _RECORD_LISTS})
        run.calls = [CallRecord(**c) for c in raw.get("calls", [])]
        run.turns = [TurnRecord(**t) for t in raw.get("turns", [])]
        run.compactions = [CompactionStat(**c) for c in raw.get("compactions", [])]
        run.prunes = [PruneStat(**p) for p in raw.get("prunes", [])]
        run.facts = [FactResult(**f) for f in raw.get("facts", [])]
        runs.append(run)
    return BenchResult(
        command=data["command"], started=data["started"], quick=data["quick"],
        seed=data["seed"], machine=data.get("machine", {}), options=data.get("options", {}),
        workloads=[WorkloadInfo(**w) for w in data.get("workloads", [])], runs=runs,
        speed=data.get("speed"), policy_time=data.get("policy_time"),
        summary_time=data.get("summary_time"), wall_s=float(data.get("wall_s", 0.0)),
        notes=list(data.get("notes", [])),
        real_sessions=[RealSessionResult(**r) for r in data.get("real_sessions", [])],
        perf=dict(data.get("perf") or {}),
        engines=list(data.get("engines", [])),
        answers=[run_from_json(a) for a in data.get("answers", [])],
    )


_RECORD_LISTS = ("calls", "turns", "compactions", "prunes", "facts")


# -- targets ---------------------------------------------------------------------------------


@dataclass
class Target:
    goal: str
    measured: str
    met: bool | None


def _fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{suffix}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def targets(result: BenchResult) -> list[Target]:
    """The stated targets with the measured value beside each (not pass/fail tests)."""
    sums = [s for s in result.summaries() if s.strategy == "policy"]
    out: list[Target] = []
    if sums:
        over = {s.workload: s.overflowed_calls for s in sums}
        out.append(Target(
            "(a) never overflows",
            ", ".join(f"{w}: {n} overflowed calls" for w, n in over.items()),
            all(n == 0 for n in over.values()),
        ))
        kept = {s.workload: s.retention_context_constraints_paths for s in sums}
        out.append(Target(
            "(a) keeps 100% of planted user constraints and file paths in context",
            ", ".join(f"{w}: {_pct(v)}" for w, v in kept.items()),
            all(v is None or v >= 1.0 for v in kept.values()),
        ))
        seen = [s for s in sums if s.questions_after_outputs]
        if seen:
            out.append(Target(
                "(a) question-time visibility 100%: every question asked with the outputs "
                "it follows in the prompt (whole, or cut to fit when one alone cannot fit)",
                ", ".join(f"{s.workload}: {_pct(s.visibility_fit)} ({_pct(s.visibility_full)} "
                          f"whole, {s.questions_after_outputs} questions)" for s in seen),
                all(s.visibility_fit == 1.0 for s in seen),
            ))
        written = [s for s in sums if s.model_summary_share is not None]
        unasked = [s for s in sums if s.model_summary_share is None and s.summaries_not_asked]
        if written or unasked:

            def asked(s: Summary) -> int:
                return sum(n for k, n in s.summaries_by.items() if k != "drop") - (
                    s.summaries_not_asked)

            out.append(Target(
                "(issue 13) at least 90% of compactions summarized by the model (accepted), "
                "of those the model was asked for",
                ", ".join([
                    *(f"{s.workload}: {_pct(s.model_summary_share)} of {asked(s)}"
                      + _not_asked(s) for s in written),
                    *(f"{s.workload}: not asked in {s.summaries_not_asked} (the window left "
                      f"the model less than the summary grammar needs)" for s in unasked),
                ]),
                all((s.model_summary_share or 0) >= 0.9 for s in written) if written
                else None,
            ))
        fills = [s for s in sums if s.min_fill_after_compaction is not None]
        if fills:
            out.append(Target(
                "(a) no compaction leaves more than half the window empty",
                ", ".join(f"{s.workload}: lowest {_pct(s.min_fill_after_compaction)}"
                          for s in fills),
                all((s.min_fill_after_compaction or 0) >= 0.5 for s in fills),
            ))
    real = [r for r in result.real_sessions if r.strategy == "policy" and r.mode == "local"]
    if real:
        out.append(Target(
            "(a) real session, local mode: every must-fact seen by the model at the end, with "
            "either summarizer",
            ", ".join(f"{r.session} {r.summarizer}: {r.seen}/{r.total}" for r in real),
            all(r.seen == r.total for r in real),
        ))
    if result.policy_time:
        pt = result.policy_time
        whole = float(pt.get("prepare_ms", 0.0))
        out.append(Target(
            "policy time <= 2 ms per call at a full 10k window",
            f"whole prepare {whole:.2f} ms (decision from memoized counts "
            f"{float(pt.get('policy_ms', 0.0)):.2f} ms + exact prompt count "
            f"{float(pt.get('exact_count_ms', 0.0)):.2f} ms), {pt.get('prompt_tokens')} "
            f"tokens, {pt.get('tokenizer')}",
            whole <= 2.0,
        ))
    if result.speed:
        sp = result.speed
        ratio = float(sp["app_tps"]) / float(sp["raw_tps"]) if sp.get("raw_tps") else 0.0
        out.append(Target(
            "in-app generation >= 90% of raw llama-cpp-python tokens/s",
            f"{ratio * 100:.0f}% ({sp['app_tps']:.1f} vs {sp['raw_tps']:.1f} tokens/s, "
            f"{sp['prompt_tokens']} prompt tokens)",
            ratio >= 0.9,
        ))
    w1 = next((s for s in sums if s.workload == "W1"), None)
    if w1 is not None:
        out.append(Target(
            "W1 prefill tokens <= 1.5x new tokens",
            f"{_fmt(w1.prefill_ratio)}x chat calls ({w1.prefill_evaluated:,} / "
            f"{w1.new_tokens:,}); {_fmt(w1.prefill_ratio_all)}x including the summarizer",
            w1.prefill_ratio is not None and w1.prefill_ratio <= 1.5,
        ))
    if result.summary_time:
        st = result.summary_time
        secs = st.get("seconds")
        out.append(Target(
            "summarizing a full local window with the embedded model <= 15 s (2 cores)",
            f"{_fmt(secs, 1, ' s')} "
            + ("with the chat cached, as after a turn in the app " if st.get("warm") else "")
            + f"({st.get('tokens_before')} -> {st.get('tokens_after')} tokens, summarizer: "
            f"{st.get('summarizer')}, {st.get('calls')} model call(s))"
            + (f"; {_fmt(st['cold'].get('seconds'), 1, ' s')} with nothing cached"
               if isinstance(st.get("cold"), dict) else ""),
            secs is not None and float(secs) <= 15.0,
        ))
    out += [Target(goal, measured, met)
            for goal, measured, met in perf_report.targets(result.perf, result.summaries())]
    return out


# -- plots -----------------------------------------------------------------------------------


def _plot(
    result: BenchResult, workload: str, metric: str, path: Path, window: int
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=100)
    for name in STRATEGY_NAMES:
        run = result.run(workload, name)
        if run is None:
            continue
        color = COLORS[name]
        style, width = STYLES[name]
        if metric == "turn_time":
            turns = [t for t in run.turns if t.phase == "workload"]
            ax.plot([t.turn for t in turns], [t.wall_s for t in turns], label=LABELS[name],
                    color=color, linestyle=style, linewidth=width, marker=".", markersize=3)
            continue
        calls = [c for c in run.calls if c.kind == "chat" and c.phase == "workload"]
        xs = list(range(1, len(calls) + 1))
        ys = [c.prompt_tokens if metric == "context" else c.evaluated for c in calls]
        ax.plot(xs, ys, label=LABELS[name], color=color, linestyle=style, linewidth=width)
        bad = [(x, y) for x, y, c in zip(xs, ys, calls, strict=True) if c.overflowed]
        if bad:
            ax.scatter([b[0] for b in bad], [b[1] for b in bad], marker="x", color=color,
                       s=14, linewidths=1)
    if metric == "context":
        ax.axhline(window, color="black", linestyle="--", linewidth=0.8, label="window")
        ax.set_ylabel("prompt tokens")
        ax.set_xlabel("chat model call (x = overflowed)")
        ax.set_title(f"{workload}: context tokens per call")
    elif metric == "prefill":
        ax.set_ylabel("tokens evaluated")
        ax.set_xlabel("chat model call")
        ax.set_title(f"{workload}: prefill tokens per call (summarizer calls not shown)")
    else:
        ax.set_ylabel("seconds")
        ax.set_xlabel("turn")
        ax.set_title(f"{workload}: wall time per turn")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best", framealpha=0.8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_plots(result: BenchResult, directory: Path, prefix: str = "") -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for info in result.workloads:
        for metric in ("context", "prefill", "turn_time"):
            path = directory / f"{prefix}{info.name.lower()}_{metric}.png"
            _plot(result, info.name, metric, path, info.window)
            out.append(path)
    return out


# -- markdown --------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _overflow_cell(s: Summary) -> str:
    if not s.overflowed_calls:
        return "0"
    first = f"first: call {s.first_overflow_call}, turn {s.first_overflow_turn}"
    return f"{s.overflowed_calls} ({first})"


def _compaction_cell(s: Summary) -> str:
    if not s.compactions:
        return "0" + (f" ({s.compaction_failures} failed)" if s.compaction_failures else "")
    text = (
        f"{s.compactions}: median {_fmt(s.compaction_median_s, 1)} s, max "
        f"{_fmt(s.compaction_max_s, 1)} s, {_fmt(s.compaction_tokens_before, 0)} -> "
        f"{_fmt(s.compaction_tokens_after, 0)} tok"
    )
    if s.compaction_failures:
        text += f"; {s.compaction_failures} failed"
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(s.summaries_by.items()) if k != "drop")
    if kinds:
        share = (f"{_pct(s.model_summary_share)} by the model"
                 if s.model_summary_share is not None else "the model never asked")
        text += f"; summaries: {kinds} ({share}{_not_asked(s)})"
    if s.model_part_fact_share is not None:
        text += (f"; planted facts named by the model-written part: "
                 f"{_pct(s.model_part_fact_share)}")
    return text


def _not_asked(s: Summary) -> str:
    """The compactions the model was not asked for, as words (empty when none)."""
    n = s.summaries_not_asked
    return (f"; {n} not asked: the window left the model less than the summary grammar "
            f"needs" if n else "")


def _workload_section(
    result: BenchResult, info: WorkloadInfo, plot_dir: str, prefix: str = ""
) -> str:
    sums = [s for s in result.summaries() if s.workload == info.name]
    order: dict[str, int] = {n: i for i, n in enumerate(STRATEGY_NAMES)}
    sums.sort(key=lambda s: order.get(s.strategy, 99))
    label = {s.strategy: strategy_label(s.strategy) for s in sums}
    load = _table(
        ["strategy", "chat calls", "overflowed", "prefill / new", "+ summarizer",
         "KV reuse", "max context", "turn median / p95 (s)", "TTFT median / p95 (s)",
         "gen tok/s"],
        [
            [label[s.strategy], str(s.chat_calls), _overflow_cell(s),
             f"{s.prefill_evaluated:,} / {s.new_tokens:,} = {_fmt(s.prefill_ratio)}x",
             f"{s.summary_prefill:,} ({_fmt(s.prefill_ratio_all)}x)", _pct(s.reused_share),
             f"{s.max_context:,}",
             f"{_fmt(s.turn_median_s)} / {_fmt(s.turn_p95_s)}",
             f"{_fmt(s.ttft_median_s)} / {_fmt(s.ttft_p95_s)}", _fmt(s.gen_tps_median, 1)]
            for s in sums
        ],
    )
    ctx = _table(
        ["strategy", "compactions / drops", "lowest fill after", "prunes (tokens freed)",
         "policy CPU ms median / p95 / max", "facts in final context (all / constraints+paths)",
         "answered at the end", "peak RSS MiB", "run wall s"],
        [
            [label[s.strategy], _compaction_cell(s), _pct(s.min_fill_after_compaction),
             f"{s.prunes} ({s.pruned_tokens:,})",
             f"{_fmt(s.policy_cpu_median_ms)} / {_fmt(s.policy_cpu_p95_ms)} / "
             f"{_fmt(s.policy_cpu_max_ms)}",
             f"{_pct(s.retention_context)} / {_pct(s.retention_context_constraints_paths)}",
             _pct(s.retention_answered), f"{s.peak_rss_mb:,.0f}", f"{s.wall_s:,.0f}"]
            for s in sums
        ],
    )
    asked = [s for s in sums if s.questions_after_outputs]
    seen = _table(
        ["strategy", "questions after tool outputs", "outputs whole", "whole or cut to fit",
         "answered when asked"],
        [
            [label[s.strategy], str(s.questions_after_outputs), _pct(s.visibility_full),
             _pct(s.visibility_fit), _pct(s.answered_when_asked)]
            for s in asked
        ],
    ) if asked else ""
    facts = _facts_table(result, info.name)
    stem = info.name.lower()
    plots = "\n".join(
        f"![{info.name} {m}]({plot_dir}/{prefix}{stem}_{m}.png)"
        for m in ("context", "prefill", "turn_time")
    )
    head = (
        f"### {info.title}\n\n{info.chat_turns} chat turns, {info.tool_steps} user tool calls, "
        f"{info.facts} planted facts; model `{info.model}`, {info.mode} mode, window "
        f"{info.window:,} tokens."
    )
    if seen:
        seen = ("Question-time visibility: the first model call of each question that "
                "follows tool outputs, and whether it holds them.\n\n" + seen)
    parts = [head, load, ctx, seen, facts, plots, _notices(result, info.name)]
    return "\n\n".join(p for p in parts if p)


def _real_section(result: BenchResult) -> str:
    """Instructions kept on real sessions, per strategy, mode and summarizer."""
    rows: list[list[str]] = []
    lost: list[str] = []
    order: dict[str, int] = {n: i for i, n in enumerate(STRATEGY_NAMES)}
    for r in sorted(result.real_sessions,
                    key=lambda x: (x.session, x.mode, x.summarizer, order.get(x.strategy, 9))):
        summaries = (f"{r.compactions} ({r.model_summaries} by the model)"
                     if r.compactions else "0")
        rows.append([
            r.session, r.mode, r.summarizer, strategy_label(r.strategy), f"{r.seen}/{r.total}",
            summaries, _pct(r.min_fill),
            f"{r.final_tokens:,} / {r.window:,}" + (" overflow" if r.final_overflowed else ""),
            f"{r.wall_s:,.0f}",
        ])
        if r.lost and r.strategy == "policy":
            lost.append(f"- {r.session}, {r.mode}, {r.summarizer}: lost "
                        + "; ".join(f"\"{f}\"" for f in r.lost))
    if not rows:
        return ""
    text = (
        "### Real sessions: what the user said, seen by the model at the end\n\n"
        "Another agent's real session replayed through each strategy (`bench."
        "real_sessions`): the must-facts of its `.facts.json` (the user's instructions, the "
        "paths read and written) matched against the prompt the model would get next (an "
        "overflowing prompt counts as nothing seen). Extractive: cl100k counts in the "
        "mode's configured window; model: the embedded model's tokenizer, window and "
        "summaries.\n\n"
        + _table(["session", "mode", "summarizer", "strategy", "must-facts seen",
                  "compactions", "lowest fill after", "final prompt / window", "wall s"], rows)
    )
    return text + ("\n\n" + "\n".join(lost) if lost else "")


def _facts_table(result: BenchResult, workload: str) -> str:
    runs = [result.run(workload, n) for n in STRATEGY_NAMES]
    present = [r for r in runs if r is not None]
    if not present or not present[0].facts:
        return ""
    header = ["planted fact", *(strategy_label(r.strategy) for r in present)]
    rows: list[list[str]] = []
    for i, fact in enumerate(present[0].facts):
        cells = [f"{fact.kind}: {fact.text[:60]}"]
        for r in present:
            f = r.facts[i]
            ans = (" / not asked" if f.answered is None
                   else " / answered" if f.answered else " / not answered")
            cells.append(("in context" if f.in_context else "gone") + ans)
        rows.append(cells)
    return _table(header, rows)


def _notices(result: BenchResult, workload: str) -> str:
    lines: list[str] = []
    for name in STRATEGY_NAMES:
        run = result.run(workload, name)
        if run is None or not run.notices:
            continue
        distinct: dict[str, int] = {}
        for n in run.notices:
            key = n.split(": ", 1)[1] if ": " in n else n
            distinct[key] = distinct.get(key, 0) + 1
        shown = "; ".join(f"{k} (x{v})" if v > 1 else k for k, v in list(distinct.items())[:4])
        lines.append(f"- {LABELS[name]}: {shown}")
    return ("Notices during the runs:\n\n" + "\n".join(lines)) if lines else ""


_QUICK_POLICY = default_local().effective(Mode.LOCAL, QUICK_LOCAL_WINDOW)
QUICK_NOTE = (
    f"**This is a quick run**: the local workloads run in a {QUICK_LOCAL_WINDOW:,}-token "
    f"window and W4 in {QUICK_STANDARD_WINDOW:,} tokens (the model is presented as trained on "
    "that length, so the mode's policy is scaled exactly as `ModePolicy.effective` does for "
    f"such a model, e.g. a {_QUICK_POLICY.summary_budget}-token summary budget and a "
    f"{_QUICK_POLICY.protect}-token prune protection locally), with small workloads (2-8 "
    "turns), replies capped at 24 tokens and, at the end, one question per kind of planted "
    "fact. Pruning, compaction and overflow all happen, but "
    "the numbers are not those of the app's real window; the speed and policy-time "
    "measurements use the real local window."
)

METHOD = """\
## How it is measured

* Every strategy runs the same workload through the same `Agent` loop on the same model,
  one after the other in one process (never two model runs at once). Replies are greedy
  (temperature 0) and at most {max_reply} tokens; the model may start at most {steps} tool
  round(s) per turn itself. File reads in the workloads are *user-initiated* (`/read`):
  an assistant tool call plus its real `read_file` result, with no model call, so the tiny
  model's tool-calling skill does not decide the workload.
* **Strategies.** (a) this project's `ContextController` with the mode's effective policy;
  (b) the same controller with pruning off and pi-mono's thresholds (reserve 16,384, keep
  recent 20,000, summary 13,107 for 131,072 tokens) scaled to the window like
  `ModePolicy.effective`; (c) pruning only, never a summary; (d) drop the oldest half of the
  conversation (by tokens) when `prompt + reserve > window` (GPT4All / llama.cpp context
  shift; here the kept half is re-evaluated because the app has no KV shift); (e) nothing.
* **New tokens** of a call are the tokens of the messages added since the previous call
  (full content, as rendered), so they are the same for every strategy; *prefill / new* is
  the prompt tokens the model actually evaluated over that (1.0 = perfect append-only KV
  cache; below 1.0 happens when pruning clears a tool output before the model ever reads
  it). Summarizer calls evaluate their own prompt (a fresh transcript) and are shown apart.
* **Policy time** is thread CPU time inside `prepare` minus the summarizer's time, per chat
  call (in-run column), and, for the target, the controller's own measurement
  (`bench.measure`) on a synthetic full 10,000-token window.
* **Retention**: a fact is *in context* when its probe string (the constraint's words, the
  path, the number) is in the last prompt of the workload (0 when that call overflowed). At
  the end each fact is asked as a question; *answered* means the reply contains the
  expected value. With a 135M-parameter model the second number is expected to be low.
* Turn time includes prefill, generation and any compaction; TTFT is from sending the
  message to the first streamed text. Peak RSS is the process's (cumulative) peak.
* Workloads are generated from the seed (`--seed`) and can be saved as OpenAI-format JSONL
  with `--save-workloads DIR` (one message per line; facts and files in
  `NAME.facts.json`), then replayed with `python -m assistant replay DIR/W1.jsonl`.
"""


def run_kind(result: BenchResult) -> str:
    return "quick" if result.quick else "full"


def _run_header(result: BenchResult) -> list[str]:
    opts = result.options
    m = result.machine
    parts = [
        f"Generated by `{result.command}` on {result.started} (seed {result.seed}, total "
        f"{result.wall_s / 60:.1f} min). Machine: {m.get('cpus', '?')} CPU cores, "
        f"{m.get('memory_gb', '?')} GB RAM, {m.get('platform', '')}, llama-cpp-python "
        f"{m.get('llama_cpp_python', '?')}; llama threads: {opts.get('threads') or 'auto'}; "
        f"load average (1/5/15 min) at start {m.get('load_at_start', '?')}, at end "
        f"{m.get('load_at_end', '?')} (other work on the machine slows every number here). "
        f"Strategies: {', '.join(strategy_label(n) for n in opts.get('strategies', []))}.",
        QUICK_NOTE if result.quick else "",
    ]
    extra: list[str] = []
    if result.speed:
        sp = result.speed
        extra.append(
            f"- Generation speed ({sp['prompt_tokens']} prompt tokens, {sp['tokens']} generated, "
            f"median of {sp['reps']}): in-app {sp['app_tps']:.1f} tokens/s, raw "
            f"`Llama.generate` {sp['raw_tps']:.1f} tokens/s."
        )
    if result.policy_time:
        pt = result.policy_time
        extra.append(
            f"- Policy time at a full window ({pt.get('window')} tokens, "
            f"{pt.get('messages')} messages, {pt.get('prompt_tokens')} prompt tokens, "
            f"{pt.get('tokenizer')}): decision {pt.get('policy_ms')} ms, exact count "
            f"{pt.get('exact_count_ms')} ms, whole `prepare` {pt.get('prepare_ms')} ms, "
            f"`prepare` of a new question each call {pt.get('prepare_turn_ms')} ms (medians)."
        )
    if result.summary_time:
        st = result.summary_time
        extra.append(
            f"- Summary of a full local window ({st.get('tokens_before')} tokens), "
            + ("the chat cached as after a turn in the app" if st.get("warm")
               else "nothing cached")
            + f": {st.get('seconds')} s, "
            f"{st.get('prompt_evaluated')} summarizer prompt tokens evaluated and "
            f"{st.get('prompt_reused')} reused in {st.get('calls')} call(s) "
            f"({st.get('approach') or 'transcript'}), summarizer `{st.get('summarizer')}`"
            + (f"; rejected: {'; '.join(st['rejected'])}" if st.get("rejected") else "") + "."
        )
        cold = st.get("cold")
        if isinstance(cold, dict):
            extra.append(
                f"- The same with nothing cached (a chat just reopened): {cold.get('seconds')} "
                f"s, {cold.get('prompt_evaluated')} prompt tokens evaluated in "
                f"{cold.get('calls')} call(s) ({cold.get('approach') or 'transcript'}), "
                f"summarizer `{cold.get('summarizer')}`."
            )
    if extra:
        parts += ["Focused measurements:", "\n".join(extra)]
    if result.notes:
        parts += ["Notes:", "\n".join(f"- {n}" for n in result.notes)]
    return parts


def render_markdown(
    results: BenchResult | Sequence[BenchResult], plot_dir: str = "bench"
) -> str:
    """The report for one invocation, or several (e.g. a full and a quick run) in one file."""
    runs = [results] if isinstance(results, BenchResult) else list(results)
    several = len(runs) > 1
    rows: list[list[str]] = []
    for r in runs:
        for t in targets(r):
            met = "n/a" if t.met is None else ("yes" if t.met else "**no**")
            rows.append(([run_kind(r)] if several else []) + [t.goal, t.measured, met])
    parts = [
        "# Benchmarks: context management on a small local model",
        "Regenerate with `make bench`: the quick run (`python -m bench --quick "
        "--report docs/BENCHMARKS.md`, all five strategies side by side in small windows, a "
        "few minutes) and then the full workloads in the app's real windows with (a) and (e) "
        "(`--strategy policy --strategy none`, under an hour on 2 cores); a run keeps the "
        "other kind's saved results in the report. `python -m bench` alone runs "
        "all five strategies on the full workloads (hours on 2 cores). "
        "`--rerender results-full.json --rerender results-quick.json --report PATH` rebuilds "
        "the report from saved runs. Numbers depend on the machine and on what else runs on "
        "it.",
        "## Targets",
        _table((["run"] if several else []) + ["target", "measured", "met"], rows),
    ]
    for r in runs:
        kind = run_kind(r)
        parts.append(f"## {kind.capitalize()} run" if several else "## Run")
        parts += _run_header(r)
        for info in r.workloads:
            parts.append(_workload_section(r, info, plot_dir, f"{kind}_"))
        parts.append(perf_report.section(r.perf, r.summaries(), _table))
        parts.append(_real_section(r))
        parts.append(answers_section(r.answers, heading="###"))
        parts.append(render_engine_section(r.engines))
    opts = runs[0].options if runs else {}
    parts.append(
        METHOD.format(max_reply=opts.get("max_reply_tokens", "?"),
                      steps=opts.get("step_limit", "?"))
    )
    return "\n\n".join(p for p in parts if p).rstrip() + "\n"


def write_report(results: BenchResult | Sequence[BenchResult], path: Path) -> list[Path]:
    """Write the markdown at ``path``; plots and ``results-KIND.json`` in ``<dir>/bench/``.

    Plots and results files of earlier reports there are removed first, so the folder holds
    exactly what the report shows.
    """
    runs = [results] if isinstance(results, BenchResult) else list(results)
    plot_dir = path.parent / "bench"
    plot_dir.mkdir(parents=True, exist_ok=True)
    for old in [*plot_dir.glob("*_w*_*.png"), *plot_dir.glob("results-*.json")]:
        old.unlink()
    written: list[Path] = [path]
    for r in runs:
        kind = run_kind(r)
        data = to_json(r, records=True)
        target = plot_dir / f"results-{kind}.json"
        target.write_text(json.dumps(data) + "\n", encoding="utf-8")
        written.append(target)
        written += write_plots(r, plot_dir, f"{kind}_")
    path.write_text(render_markdown(runs, "bench"), encoding="utf-8")
    return written


def strategy_label(name: str) -> str:
    for known in STRATEGY_NAMES:
        if known == name:
            return LABELS[known]
    return name
