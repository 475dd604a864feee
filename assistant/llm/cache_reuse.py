"""Reusing cached chunks after a changed span in the middle of a prompt (a prune, a
compaction): plan which cached runs to keep, then move them in the KV cache, evaluating the
gaps in a helper sequence. How, and what it costs: docs/PERFORMANCE.md ("Chunk reuse").
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

#: The sequence holding the chat; the helper sequence gaps are evaluated in.
MAIN_SEQ = 0
HELPER_SEQ = 1
#: Tokens of the lookup key (a chunk is at least this long anyway).
_KEY_TOKENS = 8
#: Candidate cache positions tried for one prompt position (the longest match wins).
_MAX_CANDIDATES = 8


class ReuseFailed(Exception):
    """The KV cache refused an operation; the caller evaluates the prompt instead."""


@dataclass(frozen=True)
class Chunk:
    """Cached tokens ``[cache_start, cache_start + length)`` found again at ``prompt_start``."""

    cache_start: int
    prompt_start: int
    length: int

    @property
    def shift(self) -> int:
        return self.prompt_start - self.cache_start

    @property
    def prompt_end(self) -> int:
        return self.prompt_start + self.length

    @property
    def cache_end(self) -> int:
        return self.cache_start + self.length


@dataclass(frozen=True)
class ReusePlan:
    """What to keep of the cache for a prompt: the common prefix and the moved chunks."""

    prefix: int
    chunks: tuple[Chunk, ...] = ()

    @property
    def end(self) -> int:
        """Prompt tokens ``[0, end)`` are in the cache once the plan is applied."""
        return self.chunks[-1].prompt_end if self.chunks else self.prefix

    @property
    def shifted(self) -> int:
        """Tokens kept by moving them (an approximation, unlike the prefix)."""
        return sum(c.length for c in self.chunks)

    @property
    def reused(self) -> int:
        return self.prefix + self.shifted

    def gaps(self) -> list[tuple[int, int]]:
        """Prompt spans before the chunks that must be evaluated: ``[start, end)``."""
        return _uncovered(self.prefix, [(c.prompt_start, c.prompt_end) for c in self.chunks])

    def removed(self, n_cached: int) -> list[tuple[int, int]]:
        """Cache spans no chunk keeps: ``[start, end)`` in cache positions."""
        kept = [(c.cache_start, c.cache_end) for c in self.chunks]
        return _uncovered(self.prefix, kept, n_cached)


def _uncovered(at: int, spans: Sequence[tuple[int, int]], end: int = 0) -> list[tuple[int, int]]:
    """The stretches from ``at`` up to ``end`` (or the last span) that ordered ``spans`` leave
    out."""
    out: list[tuple[int, int]] = []
    for start, stop in spans:
        if start > at:
            out.append((at, start))
        at = stop
    if end > at:
        out.append((at, end))
    return out


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def plan_reuse(
    cached: Sequence[int], prompt: Sequence[int], *, min_chunk: int, end: int | None = None,
    seam: int = 0,
) -> ReusePlan:
    """Which cached tokens serve ``prompt[:end]``: the common prefix, then, greedily left to
    right, every run of at least ``min_chunk`` (<= 0: none) found again in order, less
    ``seam`` tokens at each run's head (evaluated again with the gap)."""
    limit = len(prompt) if end is None else max(0, min(end, len(prompt)))
    prefix = min(common_prefix(cached, prompt), limit)
    if min_chunk <= 0 or len(cached) - prefix < min_chunk or limit - prefix < min_chunk:
        return ReusePlan(prefix)
    key = min(_KEY_TOKENS, min_chunk)
    cbytes = array("i", cached).tobytes()
    pbytes = array("i", prompt[:limit]).tobytes()
    index: dict[bytes, list[int]] = {}
    for c in range(prefix, len(cached) - key + 1):
        index.setdefault(cbytes[4 * c : 4 * (c + key)], []).append(c)
    chunks: list[Chunk] = []
    p, c_min = prefix, prefix
    while p + min_chunk <= limit:
        best_c, best_n = -1, 0
        cands = index.get(pbytes[4 * p : 4 * (p + key)])
        if cands:
            i = bisect_left(cands, c_min)
            for c in cands[i : i + _MAX_CANDIDATES]:
                n = _match_len(cbytes, c, pbytes, p)
                if n > best_n:
                    best_c, best_n = c, n
        if best_n >= min_chunk:
            chunks.append(Chunk(best_c, p, best_n))
            p += best_n
            c_min = best_c + best_n
        else:
            p += 1
    if seam > 0:
        chunks = [Chunk(c.cache_start + seam, c.prompt_start + seam, c.length - seam)
                  for c in chunks if c.length > seam]
    return ReusePlan(prefix, tuple(chunks))


def _match_len(cbytes: bytes, c: int, pbytes: bytes, p: int) -> int:
    """How many tokens ``cached[c:]`` and ``prompt[p:]`` share (compared in C, by halving)."""
    most = min(len(cbytes) // 4 - c, len(pbytes) // 4 - p)
    lo, hi = 0, most  # the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cbytes[4 * c : 4 * (c + mid)] == pbytes[4 * p : 4 * (p + mid)]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class KVMemory(Protocol):
    """The KV-cache operations a plan needs (llama.cpp's ``llama_memory_*`` semantics:
    ranges are positions ``[p0, p1)``, a negative bound is open)."""

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool: ...

    def seq_add(self, seq: int, p0: int, p1: int, delta: int) -> None: ...

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None: ...

    def decode(self, tokens: Sequence[int], pos: int, seq: int) -> None:
        """Evaluate ``tokens`` at positions ``pos, pos + 1, ...`` in sequence ``seq``
        (at most one batch); raises :class:`ReuseFailed` when the engine refuses."""
        ...


def shift_order(chunks: Sequence[Chunk]) -> list[Chunk]:
    """An order in which moving chunk after chunk never lands on a chunk not yet moved:
    those moving left from the left, then those moving right from the right."""
    left = [c for c in chunks if c.shift < 0]
    right = [c for c in chunks if c.shift > 0]
    return left + right[::-1]


def apply_plan(
    memory: KVMemory,
    plan: ReusePlan,
    prompt: Sequence[int],
    n_cached: int,
    *,
    batch: int,
    cancelled: Callable[[], bool] = lambda: False,
    on_tokens: Callable[[int], None] | None = None,
) -> bool:
    """Make the main sequence hold ``prompt[:plan.end]``: remove what no chunk keeps, move
    the chunks, evaluate the gaps in batches. False when ``cancelled()`` stopped it, and
    :class:`ReuseFailed` on a refusal: the cache then holds only ``plan.prefix``."""
    for start, stop in plan.removed(n_cached):
        if not memory.seq_rm(MAIN_SEQ, start, stop):
            raise ReuseFailed(f"could not remove cached positions [{start}, {stop})")
    for chunk in shift_order(plan.chunks):
        memory.seq_add(MAIN_SEQ, chunk.cache_start, chunk.cache_end, chunk.shift)
    step = max(1, batch)
    for start, stop in plan.gaps():
        memory.seq_cp(MAIN_SEQ, HELPER_SEQ, 0, start)
        try:
            at = start
            while at < stop:
                if cancelled():
                    return False
                piece = prompt[at : min(stop, at + step)]
                memory.decode(piece, at, HELPER_SEQ)
                at += len(piece)
                if on_tokens is not None:
                    on_tokens(len(piece))
            memory.seq_cp(HELPER_SEQ, MAIN_SEQ, start, stop)
        finally:
            memory.seq_rm(HELPER_SEQ, -1, -1)
    return True
