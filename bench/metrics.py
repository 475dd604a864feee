"""What one benchmark run records, and the numbers reported from it.

The runner fills a :class:`RunRecord` (every model call, every turn, every prune and
compaction, every planted fact). :func:`summarize` reduces it to a :class:`Summary`; all
definitions are here, in one place:

* **new tokens** of a chat call: the tokens of the messages added to the conversation since
  the previous chat call, each counted as rendered with its full content (so the number does
  not depend on the strategy); the first call counts its whole prompt. **Prefill ratio** =
  prompt tokens evaluated by chat calls / new tokens (1.0 = a perfect append-only KV cache;
  more means cached prefix was invalidated). Summarizer calls are reported separately and in
  ``prefill_ratio_all``.
* **overflowed calls**: model calls the backend refused with ``ContextOverflowError``.
* **turn time**: wall time of one chat message (policy, compaction, all model calls);
  **TTFT** (turn) is from sending the message to the first streamed text.
* **policy time**: time in ``prepare`` minus time in the summarizer (thread CPU time and wall
  time), per chat call.
* **re-evaluated share**: of the prompt tokens chat calls evaluated, those evaluated again:
  per call, evaluated minus the text it shows for the first time (``fresh_tokens``: its new
  messages as the prompt shows them, and a summary written since the previous chat call);
  ``reeval_share_all`` also counts every summarizer token as evaluated again (an upper
  bound).
* **TTFT bound**: the raw llama.cpp time of a turn's fresh tokens (those of its first chat
  call), evaluated where they stand in the prompt: after its reusable prefix, at the raw
  prefill rate of that context depth (``RunRecord.raw_prefill_curve``, measured in pieces
  of 512 tokens; SmolLM2 on 2 cores fell from 222 tokens/s in an empty context to 90 at
  6,144): no turn can show its first token sooner. Runs saved before the curve
  existed use the empty-context rate (``raw_prefill_tps``). Reported as the median of
  TTFT / bound.
* **retention in context**: share of facts whose probe string is in the last prompt of the
  workload (0 when that call overflowed: the model saw nothing). **Answered**: share of the
  end-of-run questions whose reply contains an accepted answer.

Percentiles interpolate linearly between order statistics (numpy's default).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Phase = Literal["workload", "probe"]
CallKind = Literal["chat", "summary"]


@dataclass
class CallRecord:
    index: int
    turn: int
    phase: Phase
    kind: CallKind
    prompt_tokens: int
    evaluated: int = 0
    reused: int = 0
    completion_tokens: int = 0
    prefill_s: float = 0.0
    generate_s: float = 0.0
    first_token_s: float | None = None
    overflowed: bool = False
    new_tokens: int = 0
    policy_cpu_s: float | None = None
    policy_wall_s: float | None = None
    #: Of ``reused``, the tokens kept by moving cached chunks (chunk reuse).
    shifted: int = 0
    #: Text the call shows for the first time: its new messages as the prompt shows them
    #: (cut or cleared), and a summary written since the last chat call.
    fresh_tokens: int = 0


Visibility = Literal["full", "cut", "cleared"]


@dataclass
class TurnRecord:
    turn: int
    phase: Phase
    wall_s: float
    ttft_s: float | None
    model_calls: int
    overflowed: bool = False
    error: str | None = None
    #: Tool outputs the user's message follows (reads since the model's last reply).
    follows: int = 0
    #: How the least visible of them was shown in the turn's first model call: whole,
    #: cut to fit (head and tail), or cleared. None when the turn follows no output.
    visibility: Visibility | None = None
    #: A question with a known answer ("read, then ask"): did the reply contain it?
    answered: bool | None = None


@dataclass
class CompactionStat:
    #: "model", "extractive", "hook" (summaries) or "drop" (drop-half).
    kind: str
    reason: str
    duration_s: float
    tokens_before: int
    tokens_after: int
    turn: int
    #: Why model-written summaries were rejected before this one was chosen.
    rejected: list[str] = field(default_factory=list)
    #: False when the window left the model too little room for the summary grammar, so it
    #: was not asked (such compactions are no measure of the model's summaries).
    asked: bool = True
    #: For a model-written summary: the workload's facts planted so far, and how many of
    #: them the model-written part names (the verbatim record beside it is code's).
    facts_planted: int = 0
    facts_in_model_part: int = 0


@dataclass
class PruneStat:
    turn: int
    messages: int
    tokens_freed: int


@dataclass
class FactResult:
    kind: str
    text: str
    in_context: bool
    answered: bool | None = None
    reply: str | None = None


@dataclass
class RunRecord:
    workload: str
    strategy: str
    model: str
    mode: str
    window: int
    policy: dict[str, Any] = field(default_factory=dict)
    calls: list[CallRecord] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    compactions: list[CompactionStat] = field(default_factory=list)
    prunes: list[PruneStat] = field(default_factory=list)
    compaction_failures: int = 0
    facts: list[FactResult] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    final_overflowed: bool = False
    #: Live tool results that differed from the recorded ones (a different window's cap).
    tool_mismatches: int = 0
    peak_rss_mb: float = 0.0
    wall_s: float = 0.0
    #: Raw llama.cpp prompt evaluation of the run's model (tokens/s), for the TTFT bound.
    raw_prefill_tps: float | None = None
    #: Raw llama.cpp prompt tokens/s by context depth: [[depth, tokens/s], ...] (pieces of
    #: 512 tokens from an empty cache; :func:`~bench.prefill.raw_prefill_curve`).
    raw_prefill_curve: list[list[float]] | None = None
    #: Whether chunk reuse was on for the run.
    chunk_reuse: bool = False
    #: Prompt tokens the read-ahead evaluated while "typing" (``RunOptions.read_ahead``).
    ahead_evaluated: int = 0
    #: The workload's chat replies, in order (to compare runs' answers).
    replies: list[str] = field(default_factory=list)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100), linear interpolation; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50.0)


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


@dataclass
class Summary:
    workload: str
    strategy: str
    chat_calls: int
    overflowed_calls: int
    #: 1-based number of the first overflowing chat call of the workload, and its turn.
    first_overflow_call: int | None
    first_overflow_turn: int | None
    prefill_evaluated: int
    new_tokens: int
    prefill_ratio: float | None
    summary_prefill: int
    prefill_ratio_all: float | None
    reused_share: float | None
    max_context: int
    turn_median_s: float | None
    turn_p95_s: float | None
    ttft_median_s: float | None
    ttft_p95_s: float | None
    compactions: int
    compaction_failures: int
    compaction_median_s: float | None
    compaction_max_s: float | None
    compaction_tokens_before: float | None
    compaction_tokens_after: float | None
    prunes: int
    pruned_tokens: int
    policy_cpu_median_ms: float | None
    policy_cpu_p95_ms: float | None
    policy_cpu_max_ms: float | None
    policy_wall_median_ms: float | None
    gen_tps_median: float | None
    retention_context: float | None
    retention_context_constraints_paths: float | None
    retention_answered: float | None
    peak_rss_mb: float
    wall_s: float
    #: Share of questions that follow tool outputs asked with all of them whole in the
    #: prompt ("full"), and whole or cut to fit because they could not fit whole ("fit").
    visibility_full: float | None = None
    visibility_fit: float | None = None
    questions_after_outputs: int = 0
    #: Share of "read, then ask" questions whose reply contained the answer.
    answered_when_asked: float | None = None
    #: Smallest prompt after a compaction, as a share of the window.
    min_fill_after_compaction: float | None = None
    #: Chat-call prompt tokens evaluated again (evaluated minus the text they show for the
    #: first time), their share of all evaluated, and the same counting every summarizer
    #: token as evaluated again.
    reevaluated: int = 0
    reeval_share: float | None = None
    reeval_share_all: float | None = None
    #: Prompt tokens kept by chunk reuse (moved rather than evaluated again).
    shifted: int = 0
    #: Time to first token against its lower bound (the turn's new tokens at the raw
    #: prefill rate of their context depth, :func:`ttft_bounds`): median ratio and the
    #: median bound itself.
    ttft_bound_ratio_median: float | None = None
    ttft_bound_median_s: float | None = None
    chunk_reuse: bool = False
    #: Summaries by summarizer ("model", "extractive", "hook"), and the reasons the
    #: model's were rejected (one entry per rejected reply).
    summaries_by: dict[str, int] = field(default_factory=dict)
    summary_rejections: list[str] = field(default_factory=list)
    #: Share of summaries (drop-half excluded) the model wrote and validation accepted.
    model_summary_share: float | None = None
    #: Compactions where the model was not asked: its part was below the grammar's minimum.
    summaries_not_asked: int = 0
    #: Of the facts planted before each model-written summary, the share its model-written
    #: part names (None: no model-written summary, or no fact planted before one).
    model_part_fact_share: float | None = None


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000.0


def summarize(run: RunRecord) -> Summary:
    """The reported numbers of one run (see the module docstring for definitions)."""
    chat = [c for c in run.calls if c.kind == "chat" and c.phase == "workload"]
    summ = [c for c in run.calls if c.kind == "summary" and c.phase == "workload"]
    done = [c for c in chat if not c.overflowed]
    over = [i for i, c in enumerate(chat, start=1) if c.overflowed]
    evaluated = sum(c.evaluated for c in chat)
    new = sum(c.new_tokens for c in chat)
    s_eval = sum(c.evaluated for c in summ)
    prompt_total = sum(c.prompt_tokens for c in done)
    turns = [t for t in run.turns if t.phase == "workload"]
    walls = [t.wall_s for t in turns]
    ttfts = [t.ttft_s for t in turns if t.ttft_s is not None]
    comp = [c for c in run.compactions if c.kind != "drop"] or run.compactions
    policy_cpu = [c.policy_cpu_s for c in chat if c.policy_cpu_s is not None]
    policy_wall = [c.policy_wall_s for c in chat if c.policy_wall_s is not None]
    tps = [
        c.completion_tokens / c.generate_s
        for c in done
        if c.completion_tokens > 1 and c.generate_s > 0
    ]
    cp = [f.in_context for f in run.facts if f.kind != "number"]
    answered = [bool(f.answered) for f in run.facts if f.answered is not None]
    seen = [t.visibility for t in turns if t.visibility is not None]
    asked = [bool(t.answered) for t in turns if t.answered is not None]
    fills = [c.tokens_after / run.window for c in run.compactions if run.window]
    reeval = sum(max(0, c.evaluated - c.fresh_tokens) for c in done)
    done_eval = sum(c.evaluated for c in done)
    ratios, bounds = ttft_bounds(run)
    by_kind: dict[str, int] = {}
    for c in run.compactions:
        by_kind[c.kind] = by_kind.get(c.kind, 0) + 1
    not_asked = sum(1 for c in run.compactions if not c.asked)
    planted = sum(c.facts_planted for c in run.compactions)
    written = sum(n for kind, n in by_kind.items() if kind != "drop") - not_asked
    return Summary(
        summaries_by=by_kind,
        model_summary_share=by_kind.get("model", 0) / written if written else None,
        summaries_not_asked=not_asked,
        model_part_fact_share=(
            sum(c.facts_in_model_part for c in run.compactions) / planted if planted else None
        ),
        summary_rejections=[why for c in run.compactions for why in c.rejected],
        workload=run.workload,
        strategy=run.strategy,
        chat_calls=len(chat),
        overflowed_calls=len(over),
        first_overflow_call=over[0] if over else None,
        first_overflow_turn=chat[over[0] - 1].turn if over else None,
        prefill_evaluated=evaluated,
        new_tokens=new,
        prefill_ratio=evaluated / new if new else None,
        summary_prefill=s_eval,
        prefill_ratio_all=(evaluated + s_eval) / new if new else None,
        reused_share=sum(c.reused for c in done) / prompt_total if prompt_total else None,
        max_context=max((c.prompt_tokens for c in chat), default=0),
        turn_median_s=median(walls),
        turn_p95_s=percentile(walls, 95),
        ttft_median_s=median(ttfts),
        ttft_p95_s=percentile(ttfts, 95),
        compactions=len(run.compactions),
        compaction_failures=run.compaction_failures,
        compaction_median_s=median([c.duration_s for c in comp]),
        compaction_max_s=max((c.duration_s for c in comp), default=None),
        compaction_tokens_before=(
            sum(c.tokens_before for c in run.compactions) / len(run.compactions)
            if run.compactions else None
        ),
        compaction_tokens_after=(
            sum(c.tokens_after for c in run.compactions) / len(run.compactions)
            if run.compactions else None
        ),
        prunes=len(run.prunes),
        pruned_tokens=sum(p.tokens_freed for p in run.prunes),
        policy_cpu_median_ms=_ms(median(policy_cpu)),
        policy_cpu_p95_ms=_ms(percentile(policy_cpu, 95)),
        policy_cpu_max_ms=_ms(max(policy_cpu, default=None)),
        policy_wall_median_ms=_ms(median(policy_wall)),
        gen_tps_median=median(tps),
        retention_context=_share([f.in_context for f in run.facts]),
        retention_context_constraints_paths=_share(cp),
        retention_answered=_share(answered),
        peak_rss_mb=run.peak_rss_mb,
        wall_s=run.wall_s,
        visibility_full=_share([v == "full" for v in seen]),
        visibility_fit=_share([v != "cleared" for v in seen]),
        questions_after_outputs=len(seen),
        answered_when_asked=_share(asked),
        min_fill_after_compaction=min(fills, default=None),
        reevaluated=reeval,
        reeval_share=reeval / done_eval if done_eval else None,
        reeval_share_all=(
            (reeval + s_eval) / (done_eval + s_eval) if done_eval + s_eval else None
        ),
        shifted=sum(c.shifted for c in done),
        ttft_bound_ratio_median=median(ratios),
        ttft_bound_median_s=median(bounds),
        chunk_reuse=run.chunk_reuse,
    )


def raw_seconds(curve: Sequence[Sequence[float]], start: int, count: int) -> float:
    """Raw llama.cpp seconds to evaluate ``count`` tokens at positions ``start`` onwards,
    from the rate of each depth piece of ``curve`` they fall in (the deepest piece's rate
    past its end)."""
    seconds = 0.0
    pos, end = start, start + count
    pieces = sorted((int(d), float(r)) for d, r in curve if r > 0)
    while pos < end and pieces:
        i = max((k for k, (d, _r) in enumerate(pieces) if d <= pos), default=0)
        nxt = pieces[i + 1][0] if i + 1 < len(pieces) else end
        upto = min(end, max(nxt, pos + 1))
        seconds += (upto - pos) / pieces[i][1]
        pos = upto
    return seconds


def ttft_bounds(run: RunRecord) -> tuple[list[float], list[float]]:
    """Per workload turn with a first token: TTFT / bound, and the bound, where the bound is
    the raw llama.cpp time of the new tokens of the turn's first chat call: at the rates of
    the depths they are evaluated at (after the prompt's reusable prefix) when the run has
    :attr:`RunRecord.raw_prefill_curve`, else at the empty-context rate."""
    if not run.raw_prefill_tps and not run.raw_prefill_curve:
        return [], []
    first: dict[int, tuple[int, int]] = {}
    for c in run.calls:
        if c.kind == "chat" and c.phase == "workload" and not c.overflowed:
            first.setdefault(c.turn, (c.fresh_tokens, c.prompt_tokens))
    ratios: list[float] = []
    bounds: list[float] = []
    for t in run.turns:
        new, prompt = first.get(t.turn, (0, 0))
        if t.phase != "workload" or t.ttft_s is None or new <= 0:
            continue
        if run.raw_prefill_curve:
            bound = raw_seconds(run.raw_prefill_curve, max(prompt - new, 0), new)
        else:
            bound = new / float(run.raw_prefill_tps or 1.0)
        bounds.append(bound)
        ratios.append(t.ttft_s / bound)
    return ratios, bounds


CUT_MARKER = "omitted here to fit the context window"


def visibility_of(outputs: Sequence[str], prompt: str) -> Visibility:
    """How the least visible of ``outputs`` appears in ``prompt``: whole, cut to fit (its
    first line and a cut marker are there), or cleared."""
    worst: Visibility = "full"
    for text in outputs:
        if text in prompt:
            continue
        head = text.split("\n", 1)[0]
        if head and head in prompt and CUT_MARKER in prompt:
            worst = "cut"
            continue
        return "cleared"
    return worst


def facts_in_text(text: str, probes: Sequence[str]) -> list[bool]:
    """For each probe: is it in ``text`` (case-insensitive)?"""
    low = text.lower()
    return [p.lower() in low for p in probes]


def answer_matches(reply: str, answers: Sequence[str]) -> bool:
    """Does ``reply`` contain any accepted answer (case-insensitive)?"""
    low = reply.lower()
    return any(a.lower() in low for a in answers)
