"""The benchmark report's prompt-evaluation part (issue 14): targets and a section.

Reads ``BenchResult.perf`` (filled by ``bench.cli``): ``prefill`` (in-app vs raw llama.cpp,
:func:`bench.prefill.prefill_speed`), ``resume`` (a reopened chat,
:func:`~bench.prefill.resume_ttft`), ``reuse_quality``
(:mod:`bench.reuse_quality`), and the per-run re-evaluated share and TTFT bound
from the summaries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .metrics import Summary
from .reuse_quality import DEFAULT_ON_AGREEMENT, default_on

Table = Callable[[Sequence[str], Sequence[Sequence[str]]], str]


def _f(value: Any, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    return f"{float(value):,.{digits}f}{suffix}"


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{float(value) * 100:.1f}%"


def targets(perf: dict[str, Any], sums: Sequence[Summary]) -> list[tuple[str, str, bool | None]]:
    """(goal, measured, met) for issue 14's targets."""
    out: list[tuple[str, str, bool | None]] = []
    resume = perf.get("resume")
    if isinstance(resume, dict):
        own = resume.get("question_own_s")
        over = None if own is None else float(resume["resume_ttft_s"]) - float(own)
        out.append((
            f"reopened chat ({resume.get('history_tokens', 0):,} tokens of history): first "
            "token within 2 s plus the question's own evaluation",
            f"{_f(resume.get('resume_ttft_s'))} s with its saved state "
            f"({resume.get('resume_evaluated')} tokens evaluated; question alone "
            f"{_f(own)} s at the raw rate, so {_f(over)} s over it) vs "
            f"{_f(resume.get('cold_ttft_s'))} s evaluating all "
            f"{resume.get('cold_evaluated', 0):,} tokens",
            None if over is None else over <= 2.0,
        ))
        live = resume.get("live_ttft_s")
        if live is not None:
            out.append((
                "restart (issue 43): first token of the question after relaunch within 1.5x "
                "of the same question before quitting, same run",
                f"{_f(resume.get('resume_ttft_s'))} s after relaunch (loading the state "
                f"included) vs {_f(live)} s before quitting "
                f"({resume.get('live_evaluated')} tokens evaluated)",
                float(resume["resume_ttft_s"]) <= 1.5 * max(float(live), 1e-9),
            ))
    out.extend(_restart_targets(perf.get("restart")))
    w1 = [s for s in sums if s.workload == "W1" and s.strategy == "policy"]
    for s in w1:
        how = "with chunk reuse" if s.chunk_reuse else "prefix reuse only"
        out.append((
            f"W1 with the policy ({how}): re-evaluated tokens <= 10% of all evaluated",
            f"{_pct(s.reeval_share)} ({s.reevaluated:,} of {s.prefill_evaluated:,} chat-call "
            f"tokens; {_pct(s.reeval_share_all)} counting every summarizer token)",
            None if s.reeval_share is None else s.reeval_share <= 0.10,
        ))
        out.append((
            f"W1 with the policy ({how}): median time to first token within 1.5x its lower "
            "bound",
            f"{_f(s.ttft_bound_ratio_median)}x (median bound {_f(s.ttft_bound_median_s)} s, "
            f"median TTFT {_f(s.ttft_median_s)} s)",
            None if s.ttft_bound_ratio_median is None else s.ttft_bound_ratio_median <= 1.5,
        ))
    prefill = perf.get("prefill")
    if isinstance(prefill, dict) and prefill.get("ratio") is not None:
        ratio = float(prefill["ratio"])
        out.append((
            "in-app prefill >= 95% of raw llama.cpp tokens/s",
            f"{ratio * 100:.0f}% ({_f(prefill.get('app_tps'), 1)} vs "
            f"{_f(prefill.get('raw_tps'), 1)} tokens/s, {prefill.get('prompt_tokens')} tokens, "
            f"{prefill.get('config')})",
            ratio >= 0.95,
        ))
    quality = perf.get("reuse_quality")
    if isinstance(quality, dict) and quality.get("positions"):
        on = default_on(quality)
        out.append((
            f"chunk reuse on by default only if greedy agreement >= "
            f"{DEFAULT_ON_AGREEMENT * 100:.0f}%",
            f"{_pct(quality.get('position_agreement'))} of {quality['positions']} positions "
            f"({_pct(quality.get('next_token_agreement'))} of next tokens), mean KL "
            f"{_f(quality.get('mean_kl'), 4)}: "
            + ("supports on" if on else "keep off" if on is not None else "too few positions"),
            None,
        ))
    return out


def section(perf: dict[str, Any], sums: Sequence[Summary], table: Table) -> str:
    """The markdown section (empty when nothing was measured)."""
    parts: list[str] = []
    rows = [
        [s.workload, s.strategy + (" + chunk reuse" if s.chunk_reuse else ""),
         f"{s.reevaluated:,} / {s.prefill_evaluated:,} = {_pct(s.reeval_share)}",
         _pct(s.reeval_share_all), f"{s.shifted:,}",
         f"{_f(s.ttft_median_s)} / {_f(s.ttft_bound_median_s)} = "
         f"{_f(s.ttft_bound_ratio_median)}x"]
        for s in sums
    ]
    if rows:
        parts.append(
            "Tokens evaluated more than once (per chat call: evaluated minus the text it shows "
            "for the first time) and the time to first token against its lower bound (the "
            "turn's new tokens at the raw llama.cpp prefill rate of the context depth they are "
            "evaluated at):\n\n"
            + table(["workload", "strategy", "re-evaluated / evaluated", "+ summarizer",
                     "moved (chunk reuse)", "TTFT median / bound (s)"], rows)
        )
    prefill = perf.get("prefill")
    if isinstance(prefill, dict):
        cal = prefill.get("calibration")
        line = (
            f"- Prefill, {prefill.get('prompt_tokens')} tokens from an empty cache, median of "
            f"{prefill.get('reps')}: in-app {_f(prefill.get('app_tps'), 1)} tokens/s, raw "
            f"llama.cpp (`llama_decode`, same settings: {prefill.get('config')}) "
            f"{_f(prefill.get('raw_tps'), 1)} tokens/s; raw with llama.cpp's usual "
            f"{prefill.get('default_config')} {_f(prefill.get('raw_default_tps'), 1)} tokens/s."
        )
        if isinstance(cal, dict):
            trials = ", ".join(f"{t[0]}t/{t[1]}/{t[2]}: {t[3]:.0f}" for t in cal["trials"])
            line += (
                f" Calibration on first load: {cal.get('seconds')} s on "
                f"{cal.get('prompt_tokens')} tokens, chose {cal.get('chosen')} "
                f"(threads/n_batch/n_ubatch: tokens/s: {trials})."
            )
        parts.append(line)
    resume = perf.get("resume")
    if isinstance(resume, dict):
        parts.append(
            f"- Reopened chat, {resume.get('history_tokens', 0):,} tokens of history plus a "
            f"question ({resume.get('prompt_tokens', 0):,} tokens): first token after "
            f"{_f(resume.get('resume_ttft_s'))} s with its saved state (loading "
            f"{resume.get('state_mb')} MB took {_f(resume.get('restore_s'), 3)} s; "
            f"{resume.get('resume_evaluated')} tokens evaluated) against "
            f"{_f(resume.get('cold_ttft_s'))} s evaluating everything; saving it took "
            f"{_f(resume.get('copy_s'), 3)} s on the model's thread and "
            f"{_f(resume.get('write_s'), 3)} s on the writer's. Same greedy reply as the chat "
            f"never closed: {'yes' if resume.get('same_reply_as_live') else '**no**'}; as "
            f"the full evaluation: {'yes' if resume.get('same_reply') else 'no'} (it rounds "
            "differently)."
        )
    quality = perf.get("reuse_quality")
    if isinstance(quality, dict):
        if quality.get("positions"):
            rows = [
                [str(p["prompt_tokens"]), str(p["shifted"]), str(p["evaluated_reuse"]),
                 "yes" if p["next_token_agrees"] else "**no**",
                 f"{p['continuation_common']}/{quality['continuation']}",
                 f"{p['positions_agreeing']}/{p['positions']}", f"{p['kl_mean']:.4f}",
                 f"{p['kl_max']:.3f}"]
                for p in quality.get("pairs", [])
            ]
            parts.append(
                f"- Chunk reuse against full evaluation on {quality['calls_measured']} of the "
                f"{quality['candidates']} calls (of {quality['calls_seen']}) whose prompt "
                f"changed in the middle (runs of {quality['min_chunk']}+ tokens moved): "
                f"greedy next token agrees in {_pct(quality.get('next_token_agreement'))}, "
                f"the {quality['continuation']}-token greedy continuation is identical in "
                f"{_pct(quality.get('continuation_identical'))} (on average its first "
                f"{_f(quality.get('continuation_common_mean'), 1)} tokens agree); fed the same "
                f"continuation, the greedy token agrees at "
                f"{_pct(quality.get('position_agreement'))} of {quality['positions']} positions, "
                f"mean KL(full || reused) {_f(quality.get('mean_kl'), 4)} nats (max "
                f"{_f(quality.get('max_kl'), 3)})."
                + (
                    f" Control, plain prefix reuse from the same cache (exact up to rounding): "
                    f"next token {_pct(quality.get('control_next_token_agreement'))}, "
                    f"continuation identical {_pct(quality.get('control_continuation_identical'))}"
                    f", positions {_pct(quality.get('control_position_agreement'))}, mean KL "
                    f"{_f(quality.get('control_mean_kl'), 4)}."
                    if quality.get("control_position_agreement") is not None else ""
                )
                + "\n\n"
                + table(["prompt", "moved", "evaluated", "next token", "continuation",
                         "positions agreeing", "mean KL", "max KL"], rows)
            )
        else:
            parts.append(
                f"- Chunk reuse quality: no call among {quality.get('calls_seen', 0)} had its "
                "prompt changed in the middle, nothing to measure."
            )
    if not parts:
        return ""
    return "### Prompt evaluation (issue 14)\n\n" + "\n\n".join(parts)


def _restart_targets(got: Any) -> list[tuple[str, str, bool | None]]:
    """Issue 43 through the app (:mod:`bench.restart`): the same short question before
    quitting and after a relaunch, in one run."""
    if not isinstance(got, dict):
        return []
    before, after = got["before"], got["after"]
    live, restarted = float(got["live_ttft_s"]), float(got["restart_ttft_s"])
    said = (f"{restarted:.2f} s after relaunch ({after['evaluated']:,} tokens evaluated, "
            f"{after['reused']:,} from the saved state, compaction: "
            f"{'yes' if after['compacted'] else 'no'}) vs {live:.2f} s before quitting "
            f"({before['evaluated']:,} evaluated, compaction: "
            f"{'yes' if before['compacted'] else 'no'}); same prompt: "
            f"{'yes' if got['same_prompt'] else 'no'}")
    return [
        (f"restart through the app ({got['history_tokens']:,}-token chat): first token of "
         "the question after relaunch within 1.5x of before quitting", said,
         restarted <= 1.5 * max(live, 1e-9)),
        ("restart: the prompt after relaunch is the one before quitting, no extra compaction",
         said, bool(got["same_prompt"]) and after["compacted"] == before["compacted"]),
    ]
