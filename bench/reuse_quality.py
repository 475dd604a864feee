"""What chunk reuse costs in quality, measured on the benchmark's own model calls.

Chunk reuse (:mod:`assistant.llm.cache_reuse`) keeps cached tokens after a changed span by
moving them; they were computed next to text that is now gone, so the model's view
differs from a full evaluation. For each recorded call whose prompt differs from the cache
the call found by a span in the middle (a prune, a compaction), this module evaluates the
prompt twice, from scratch and by chunk reuse from that cache, and compares:

* **next token**: does the greedy next token agree?
* **continuation**: the greedy continuation of ``continuation`` tokens, free-running in each;
  identical or not, and how many leading tokens agree;
* **per position** (teacher-forced): the full evaluation's continuation is fed to both, and
  at each of the ``continuation`` positions the greedy choice is compared and the KL
  divergence KL(full || reused) of the next-token distributions is taken;
* **control**: the same for plain prefix reuse from the same cache (what the app does
  without chunk reuse; exact up to rounding, as llama.cpp's batches differ), the noise
  floor of the comparison on this model.

The headline figures are the agreement of the greedy token over all positions and the mean
KL; the setting is on by default only if agreement is at least :data:`DEFAULT_ON_AGREEMENT`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from assistant.llm.cache_reuse import plan_reuse
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.llama_probe import LogitProbe, Logits

#: Chunk reuse is on by default only if the greedy agreement reaches this (issue 14).
DEFAULT_ON_AGREEMENT = 0.95
#: A recorded call: (the tokens its cache held, its prompt tokens).
Pair = tuple[list[int], list[int]]


def log_softmax(x: Logits) -> Logits:
    shifted = x - x.max()
    out: Logits = shifted - math.log(float(np.exp(shifted).sum()))
    return out


def kl_divergence(p_logits: Logits, q_logits: Logits) -> float:
    """KL(p || q) of the next-token distributions given by two logit vectors (nats)."""
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return max(0.0, float((np.exp(lp) * (lp - lq)).sum()))


@dataclass
class PairQuality:
    prompt_tokens: int
    cached_tokens: int
    prefix: int
    shifted: int
    evaluated_reuse: int
    next_token_agrees: bool
    continuation_identical: bool
    continuation_common: int
    positions: int
    positions_agreeing: int
    kl_mean: float
    kl_max: float
    seconds: float
    #: The same measures for plain prefix reuse from the same cache (what the app does
    #: without chunk reuse: exact up to rounding), the noise floor of the comparison.
    control_next_token_agrees: bool | None = None
    control_continuation_identical: bool | None = None
    control_positions_agreeing: int | None = None
    control_kl_mean: float | None = None


@dataclass
class ReuseQuality:
    min_chunk: int
    continuation: int
    pairs: list[PairQuality] = field(default_factory=list)
    #: Calls recorded, and those with a changed span in the middle (candidates).
    calls_seen: int = 0
    candidates: int = 0
    #: Tokens after each seam evaluated again instead of moved.
    seam: int = 0

    @property
    def positions(self) -> int:
        return sum(p.positions for p in self.pairs)

    def _control(self) -> dict[str, Any]:
        pairs = [p for p in self.pairs if p.control_positions_agreeing is not None]
        positions = sum(p.positions for p in pairs)
        if not pairs or not positions:
            return {}
        n = len(pairs)
        return {
            "control_next_token_agreement": sum(bool(p.control_next_token_agrees)
                                                for p in pairs) / n,
            "control_continuation_identical": sum(bool(p.control_continuation_identical)
                                                  for p in pairs) / n,
            "control_position_agreement": sum(p.control_positions_agreeing or 0
                                              for p in pairs) / positions,
            "control_mean_kl": sum((p.control_kl_mean or 0.0) * p.positions
                                   for p in pairs) / positions,
        }

    def summary(self) -> dict[str, Any]:
        pairs = self.pairs
        n = len(pairs)
        positions = self.positions
        return {
            "min_chunk": self.min_chunk,
            "seam": self.seam,
            "continuation": self.continuation,
            "calls_seen": self.calls_seen,
            "candidates": self.candidates,
            "calls_measured": n,
            "positions": positions,
            "next_token_agreement": sum(p.next_token_agrees for p in pairs) / n if n else None,
            "continuation_identical": (
                sum(p.continuation_identical for p in pairs) / n if n else None
            ),
            "continuation_common_mean": (
                sum(p.continuation_common for p in pairs) / n if n else None
            ),
            "position_agreement": (
                sum(p.positions_agreeing for p in pairs) / positions if positions else None
            ),
            "mean_kl": (
                sum(p.kl_mean * p.positions for p in pairs) / positions if positions else None
            ),
            "max_kl": max((p.kl_max for p in pairs), default=None),
            "shifted_share": (
                sum(p.shifted for p in pairs) / sum(p.prompt_tokens for p in pairs)
                if pairs else None
            ),
            **self._control(),
            "pairs": [asdict(p) for p in pairs],
        }


def default_on(summary: dict[str, Any]) -> bool | None:
    """Whether the measurement supports turning chunk reuse on by default (None: too few
    positions to say: at least 200 are needed)."""
    agreement = summary.get("position_agreement")
    nxt = summary.get("next_token_agreement")
    if agreement is None or nxt is None or summary.get("positions", 0) < 200:
        return None
    return bool(agreement >= DEFAULT_ON_AGREEMENT and nxt >= DEFAULT_ON_AGREEMENT)


def candidates(pairs: Sequence[Pair], min_chunk: int) -> list[Pair]:
    """The calls chunk reuse would serve differently from prefix reuse."""
    out: list[Pair] = []
    for cached, prompt in pairs:
        if plan_reuse(cached, prompt, min_chunk=min_chunk, end=len(prompt) - 1).chunks:
            out.append((cached, prompt))
    return out


def _served(
    probe: LogitProbe, cached: list[int], prompt: list[int], min_chunk: int,
    full_tokens: list[int], full_logits: list[Logits],
) -> tuple[Any, list[int], list[float], list[bool]]:
    """Serve ``prompt`` from ``cached`` (chunk reuse with ``min_chunk``, 0: prefix only):
    the plan, the free-running greedy continuation, and per position the KL and whether
    the greedy token agrees with the full evaluation when fed its continuation."""
    probe.hold(cached)
    plan, first = probe.prompt(prompt, min_chunk)
    tokens, _ = probe.greedy(first, len(full_tokens))
    probe.rewind(len(prompt))
    forced = [first, *probe.forced(full_tokens[:-1])]
    kls = [kl_divergence(f, r) for f, r in zip(full_logits, forced, strict=True)]
    agree = [int(f.argmax()) == int(r.argmax()) for f, r in zip(full_logits, forced,
                                                               strict=True)]
    return plan, tokens, kls, agree


def measure_pair(probe: LogitProbe, pair: Pair, *, min_chunk: int, continuation: int,
                 control: bool = True) -> PairQuality:
    cached, prompt = pair
    started = time.perf_counter()
    probe.hold([])
    _plan, full_first = probe.prompt(prompt, 0)
    full_tokens, full_logits = probe.greedy(full_first, continuation)
    plan, reuse_tokens, kls, agree = _served(
        probe, cached, prompt, min_chunk, full_tokens, full_logits
    )
    common = 0
    for a, b in zip(full_tokens, reuse_tokens, strict=True):
        if a != b:
            break
        common += 1
    extra: dict[str, Any] = {}
    if control:
        _p, c_tokens, c_kls, c_agree = _served(probe, cached, prompt, 0, full_tokens,
                                              full_logits)
        extra = {
            "control_next_token_agrees": c_agree[0],
            "control_continuation_identical": c_tokens == full_tokens,
            "control_positions_agreeing": sum(c_agree),
            "control_kl_mean": sum(c_kls) / len(c_kls),
        }
    return PairQuality(
        prompt_tokens=len(prompt), cached_tokens=len(cached), prefix=plan.prefix,
        shifted=plan.shifted, evaluated_reuse=len(prompt) - plan.reused,
        next_token_agrees=agree[0], continuation_identical=full_tokens == reuse_tokens,
        continuation_common=common, positions=len(kls), positions_agreeing=sum(agree),
        kl_mean=sum(kls) / len(kls), kl_max=max(kls), seconds=time.perf_counter() - started,
        **extra,
    )


def measure(
    backend: LlamaBackend,
    pairs: Sequence[Pair],
    *,
    min_chunk: int = 64,
    continuation: int = 32,
    min_positions: int = 200,
    max_calls: int = 40,
    seam: int = 0,
    progress: Callable[[str], None] | None = None,
) -> ReuseQuality:
    """Measure the candidate calls among ``pairs`` (the most-shifted first, spread over the
    run) until ``min_positions`` positions are covered or ``max_calls`` calls measured.
    ``seam``: tokens after each seam evaluated again instead of moved (see ``plan_reuse``)."""
    found = candidates(pairs, min_chunk)
    result = ReuseQuality(min_chunk, continuation, calls_seen=len(pairs), candidates=len(found),
                          seam=seam)
    if not found:
        return result
    if backend.chunk_reuse_blocker is not None:
        raise ValueError(f"chunk reuse is not possible here: {backend.chunk_reuse_blocker}")
    # Spread the measured calls over the run: every k-th candidate.
    need = min(max_calls, len(found), math.ceil(min_positions / (continuation + 1)) + 1)
    step = max(1, len(found) // need)
    chosen = found[::step]
    probe = LogitProbe(backend)
    backend.reuse_seam = seam
    try:
        for i, pair in enumerate(chosen, start=1):
            got = measure_pair(probe, pair, min_chunk=min_chunk, continuation=continuation)
            result.pairs.append(got)
            if progress is not None:
                verdict = "agrees" if got.next_token_agrees else "differs"
                progress(
                    f"reuse quality {i}/{len(chosen)}: {got.prompt_tokens} tokens, "
                    f"{got.shifted} moved, next token {verdict}, "
                    f"{got.positions_agreeing}/{got.positions} positions, KL {got.kl_mean:.3f}"
                )
            if result.positions >= min_positions and i >= need:
                break
    finally:
        backend.reuse_seam = 0
        backend.reset_kv_cache()
    return result
