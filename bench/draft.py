"""Draft-model speculative decoding measured on the W1 workload's replies
(``python -m bench --draft MAIN:DRAFT``).

Each prompt is one of W1's questions with the file reads before it (quick W1, seed 0). The
main model answers it at temperature 0 three ways, in rotating order over ``rounds``, the
cache warm (the prompt is evaluated once first), so only decoding is timed:

* ``plain``: the main model as the app loads it without a pairing (repacked weights where
  the CPU has repacking), one token per call;
* ``flat``: the main model as the pairing loads it (no repacked weights), one token per call;
* ``draft``: the pairing: the draft model proposes, the flat main model verifies in batches.

It reports decode tokens/s after the first token (medians), the speed-up of ``draft`` over
``plain`` (the user's choice: with the pairing or without), the drafts' acceptance, whether
the draft's reply is token for token the flat model's plain reply, the draft model's load
time and the process's resident memory before and after loading it.
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from assistant.config import DEFAULT_SYSTEM_PROMPT
from assistant.llm.base import GenerationOptions, GenerationResult

from .workloads import ChatStep, generate

VARIANTS = ("plain", "flat", "draft")


def w1_prompts(count: int) -> list[list[dict[str, Any]]]:
    """The first ``count`` W1 questions, each with the system prompt and its file reads."""
    wl = generate("W1", 0, quick=True)
    prompts: list[list[dict[str, Any]]] = []
    pending: list[dict[str, Any]] = []
    for step, msgs in _steps_with_messages(wl):
        if isinstance(step, ChatStep):
            prompts.append([{"role": "system", "content": DEFAULT_SYSTEM_PROMPT}, *pending,
                            *msgs])
            pending = []
            if len(prompts) == count:
                break
        else:
            pending.extend(msgs)
    return prompts


def _steps_with_messages(wl: Any) -> list[tuple[Any, list[dict[str, Any]]]]:
    """Each step of ``wl`` with the messages it adds (a read: the call and its result)."""
    out = []
    all_msgs = wl.messages()
    at = 0
    for step in wl.steps:
        n = 1 if isinstance(step, ChatStep) else 2
        out.append((step, all_msgs[at : at + n]))
        at += n
    return out


@dataclass
class DraftRun:
    """One prompt: decode tokens/s per variant (every round), the draft's acceptance."""

    prompt: int
    rates: dict[str, list[float]] = field(default_factory=dict)
    tokens: int = 0
    acceptance: float = 0.0
    identical: bool = False
    same_tokens: int = 0

    def median(self, variant: str) -> float:
        return statistics.median(self.rates[variant]) if self.rates.get(variant) else 0.0


def _decode_rate(result: GenerationResult) -> float:
    first = result.first_token_s or 0.0
    decode = result.prefill_s + result.generate_s - first
    return (result.completion_tokens - 1) / decode if decode > 0 else 0.0


def _reply(backend: Any, msgs: list[dict[str, Any]], max_tokens: int
           ) -> tuple[GenerationResult, list[int]]:
    prompt = backend.tokenize_prompt(backend.render_prompt(msgs))
    result = None
    for event in backend.generate_tokens(prompt, GenerationOptions(max_tokens, temperature=0.0)):
        result = event.result or result
    assert result is not None
    reply = backend.cached_tokens()[len(prompt) : len(prompt) + result.completion_tokens]
    return result, reply


def _rss_mb() -> float:
    """The process's current resident memory in MB (Linux), else its peak."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[1])
        return pages * resource.getpagesize() / 1e6
    except OSError:  # pragma: no cover - not Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def run(main: str, draft: str, *, prompts: int = 3, rounds: int = 2, max_tokens: int = 64,
        threads: int = 0) -> dict[str, Any]:
    """Measure ``main`` with and without ``draft`` (see the module docstring)."""
    from assistant.llm.llama_backend import LlamaBackend

    say = print
    plain = LlamaBackend.load(main, n_ctx=4096, threads=threads, calibrate=True,
                              flat_weights=False)
    flat = LlamaBackend.load(main, n_ctx=4096, threads=threads, calibrate=True,
                             flat_weights=True)
    rss_before = _rss_mb()
    started = time.perf_counter()
    flat.use_draft_model(draft)
    load_s = time.perf_counter() - started
    rss_after = _rss_mb()
    if flat.draft is None:
        raise RuntimeError(f"the draft model was not used: {flat.draft_problem}")
    drafter = flat.draft
    runs: list[DraftRun] = []
    try:
        for p, msgs in enumerate(w1_prompts(prompts)):
            run_ = DraftRun(p)
            for backend in (plain, flat):  # the prompt evaluated once: the timed calls reuse it
                flat.draft = None
                _reply(backend, msgs, 1)
            texts: dict[str, list[int]] = {}
            accepted: list[float] = []
            for r in range(rounds):
                order = VARIANTS[r % 3:] + VARIANTS[: r % 3]
                for variant in order:
                    backend = plain if variant == "plain" else flat
                    flat.draft = drafter if variant == "draft" else None
                    result, reply = _reply(backend, msgs, max_tokens)
                    run_.rates.setdefault(variant, []).append(_decode_rate(result))
                    texts.setdefault(variant, reply)
                    run_.tokens = result.completion_tokens
                    if variant == "draft" and flat.draft_stats is not None:
                        accepted.append(flat.draft_stats.acceptance)
                    say(f"  prompt {p} round {r} {variant:5}: "
                        f"{run_.rates[variant][-1]:5.2f} tok/s", file=sys.stderr)
            run_.acceptance = statistics.mean(accepted) if accepted else 0.0
            # Plain decoding leaves its last token out of the cache: compared up to it.
            n = min(len(texts["flat"]), len(texts["draft"]))
            a, b = texts["flat"][:n], texts["draft"][:n]
            run_.identical = a == b
            run_.same_tokens = next((i for i, (x, y) in enumerate(zip(a, b, strict=True))
                                     if x != y), n)
            runs.append(run_)
    finally:
        flat.draft = drafter
        flat.close()
        plain.close()
    medians = {v: statistics.median([x for r in runs for x in r.rates[v]]) for v in VARIANTS}
    ratios = [r.median("draft") / r.median("plain") for r in runs if r.median("plain")]
    return {
        "main": main, "draft": draft, "prompts": prompts, "rounds": rounds,
        "max_tokens": max_tokens, "draft_load_s": round(load_s, 2),
        "rss_before_draft_mb": round(rss_before), "rss_after_draft_mb": round(rss_after),
        "median_tps": {k: round(v, 2) for k, v in medians.items()},
        "speedup_vs_plain": round(statistics.median(ratios), 2) if ratios else None,
        "speedup_vs_flat": round(medians["draft"] / medians["flat"], 2)
        if medians["flat"] else None,
        "all_identical": all(r.identical for r in runs),
        "runs": [asdict(r) for r in runs],
    }


def render(result: dict[str, Any], command: str) -> str:
    """A markdown table of :func:`run`'s result."""
    lines = [
        "### Draft-model decoding on W1's replies",
        "",
        f"`{command}`: {result['main']} with {result['draft']} drafting; temperature 0, "
        f"up to {result['max_tokens']} tokens, decode tokens/s after the first token, "
        f"median of {result['rounds']} rotating rounds per prompt.",
        "",
        "| prompt | tokens | plain tok/s | flat tok/s | draft tok/s | speed-up vs plain "
        "| drafts accepted | same tokens as flat (those cached) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in result["runs"]:
        med = {v: statistics.median(r["rates"][v]) for v in VARIANTS}
        same = "yes" if r["identical"] else f"no (first {r['same_tokens']})"
        lines.append(
            f"| W1 #{r['prompt']} | {r['tokens']} | {med['plain']:.2f} | {med['flat']:.2f} | "
            f"{med['draft']:.2f} | {med['draft'] / med['plain']:.2f}x | "
            f"{r['acceptance']:.0%} | {same} |"
        )
    lines += [
        "",
        f"Median speed-up over plain decoding: **{result['speedup_vs_plain']}x** (over the "
        f"flat model: {result['speedup_vs_flat']}x). Draft model loaded in "
        f"{result['draft_load_s']} s; resident memory {result['rss_before_draft_mb']} MB -> "
        f"{result['rss_after_draft_mb']} MB.",
    ]
    return "\n".join(lines) + "\n"
