"""Chunk reuse bookkeeping, on a scripted KV cache that behaves like llama.cpp's.

:class:`ScriptedMemory` keeps cells (position, token, sequences) and enforces what llama.cpp
enforces: a batch must start right after the sequence's highest position, and a position
is held once per sequence. Each evaluated cell remembers what it attended to (the cells of
its sequence at or before its position), so a test can check that a gap saw exactly the
prompt before it, and that after the plan the main sequence holds the prompt, token for
token, at the right positions.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from assistant.llm.cache_reuse import (
    HELPER_SEQ,
    MAIN_SEQ,
    Chunk,
    ReuseFailed,
    ReusePlan,
    apply_plan,
    plan_reuse,
    shift_order,
)


@dataclass
class Cell:
    pos: int
    token: int
    seqs: set[int]
    evaluated: bool
    #: Tokens this cell attended to, by position (itself included), when it was evaluated.
    saw: tuple[int, ...] = ()
    shifted: int = 0


@dataclass
class ScriptedMemory:
    cells: list[Cell] = field(default_factory=list)
    decoded: int = 0
    refuse_rm: bool = False

    @classmethod
    def holding(cls, tokens: Sequence[int]) -> ScriptedMemory:
        mem = cls()
        mem.decode(tokens, 0, MAIN_SEQ)
        mem.decoded = 0
        for c in mem.cells:
            c.evaluated = False
        return mem

    @staticmethod
    def _in(pos: int, p0: int, p1: int) -> bool:
        return (p0 < 0 or pos >= p0) and (p1 < 0 or pos < p1)

    def seq(self, seq: int) -> list[Cell]:
        return sorted((c for c in self.cells if seq in c.seqs), key=lambda c: c.pos)

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        if self.refuse_rm:
            return False
        for c in self.cells:
            if self._in(c.pos, p0, p1):
                if seq < 0:
                    c.seqs.clear()
                else:
                    c.seqs.discard(seq)
        self.cells = [c for c in self.cells if c.seqs]
        return True

    def seq_add(self, seq: int, p0: int, p1: int, delta: int) -> None:
        for c in self.cells:
            if seq in c.seqs and self._in(c.pos, p0, p1):
                assert c.seqs == {seq}, "a shared cell would move in every sequence"
                c.pos += delta
                c.shifted += delta
        self.cells = [c for c in self.cells if c.pos >= 0]
        positions = [c.pos for c in self.seq(seq)]
        assert len(positions) == len(set(positions)), "a shift landed on a held position"

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        for c in self.cells:
            if src in c.seqs and self._in(c.pos, p0, p1):
                c.seqs.add(dst)

    def decode(self, tokens: Sequence[int], pos: int, seq: int) -> None:
        held = self.seq(seq)
        if held and pos != held[-1].pos + 1:
            raise ReuseFailed(f"batch at {pos} after position {held[-1].pos}")
        for i, tok in enumerate(tokens):
            visible = {c.pos: c.token for c in self.seq(seq) if c.pos <= pos + i}
            visible[pos + i] = tok
            saw = tuple(visible[p] for p in sorted(visible))
            self.cells.append(Cell(pos + i, tok, {seq}, True, saw))
        self.decoded += len(tokens)

    def main_tokens(self) -> list[int]:
        cells = self.seq(MAIN_SEQ)
        assert [c.pos for c in cells] == list(range(len(cells))), "positions not contiguous"
        return [c.token for c in cells]


def _run(cached: list[int], prompt: list[int], min_chunk: int = 4, batch: int = 3) -> tuple[
    ReusePlan, ScriptedMemory
]:
    plan = plan_reuse(cached, prompt, min_chunk=min_chunk, end=len(prompt) - 1)
    mem = ScriptedMemory.holding(cached)
    assert apply_plan(mem, plan, prompt, len(cached), batch=batch)
    # What the caller does next: evaluate the tail in the main sequence.
    mem.decode(prompt[plan.end : len(prompt) - 1], plan.end, MAIN_SEQ)
    return plan, mem


def _check(cached: list[int], prompt: list[int], plan: ReusePlan, mem: ScriptedMemory) -> None:
    assert mem.main_tokens() == prompt[:-1]
    assert not mem.seq(HELPER_SEQ), "the helper sequence is left empty"
    # Every evaluated cell saw exactly the prompt up to itself.
    for c in mem.seq(MAIN_SEQ):
        if c.evaluated:
            assert c.saw == tuple(prompt[: c.pos + 1])
    assert mem.decoded == len(prompt) - 1 - plan.reused


def test_a_pruned_output_keeps_what_follows() -> None:
    P, X, Xp, S, N = [1, 2, 3], list(range(100, 120)), [7, 7], list(range(200, 230)), [9, 9, 9]
    cached, prompt = P + X + S, P + Xp + S + N
    plan, mem = _run(cached, prompt)
    assert plan.prefix == 3
    assert plan.chunks == (Chunk(cache_start=23, prompt_start=5, length=30),)
    assert plan.chunks[0].shift == -18
    assert plan.gaps() == [(3, 5)]
    assert plan.removed(len(cached)) == [(3, 23)]
    _check(cached, prompt, plan, mem)
    # The chunk's cells were moved, not evaluated again.
    moved = [c for c in mem.seq(MAIN_SEQ) if 5 <= c.pos < 35]
    assert all(not c.evaluated and c.shifted == -18 for c in moved)


def test_seam_tokens_are_evaluated_again_not_moved() -> None:
    P, X, Xp, S, N = [1, 2, 3], list(range(100, 120)), [7, 7], list(range(200, 230)), [9, 9, 9]
    cached, prompt = P + X + S, P + Xp + S + N
    plan = plan_reuse(cached, prompt, min_chunk=8, end=len(prompt) - 1, seam=4)
    # The chunk starts 4 tokens later; those 4 join the gap and see the new text before them.
    assert plan.chunks == (Chunk(cache_start=27, prompt_start=9, length=26),)
    assert plan.gaps() == [(3, 9)]
    assert plan.removed(len(cached)) == [(3, 27)]
    mem = ScriptedMemory.holding(cached)
    assert apply_plan(mem, plan, prompt, len(cached), batch=8)
    mem.decode(prompt[plan.end : len(prompt) - 1], plan.end, MAIN_SEQ)
    _check(cached, prompt, plan, mem)
    seam_cells = [c for c in mem.seq(MAIN_SEQ) if 5 <= c.pos < 9]
    assert all(c.evaluated and not c.shifted for c in seam_cells)
    # A chunk no longer than the seam is not moved at all.
    assert plan_reuse(cached, prompt, min_chunk=8, end=len(prompt) - 1, seam=30).chunks == ()


def test_several_spans_replaced_shrunk_grown_and_dropped() -> None:
    P = [1, 2]
    S1, S2, S3 = list(range(300, 310)), list(range(400, 412)), list(range(500, 506))
    cached = P + [10] * 6 + S1 + [11, 12] + S2 + [13] * 9 + S3 + [14, 15]
    # The first span shrinks, the second grows (a summary longer than what it replaced),
    # the third disappears, and new tokens follow.
    prompt = [*P, 20, *S1, 21, 22, 23, 24, 25, *S2, *S3, 30, 31, 32]
    plan, mem = _run(cached, prompt)
    assert [c.shift for c in plan.chunks] == [-5, -2, -11]
    _check(cached, prompt, plan, mem)
    plan2 = ReusePlan(0, (Chunk(10, 2, 5), Chunk(20, 25, 5), Chunk(30, 40, 3)))
    assert [c.shift for c in shift_order(plan2.chunks)] == [-8, 10, 5]


def test_growing_spans_shift_right_to_left_without_collisions() -> None:
    P = [1]
    S1, S2, S3 = list(range(100, 106)), list(range(200, 206)), list(range(300, 306))
    cached = [*P, 5, *S1, 6, *S2, 7, *S3]
    prompt = [*P, 8, 8, 8, 8, *S1, 9, 9, 9, 9, *S2, 10, 10, 10, *S3, 0]
    plan, mem = _run(cached, prompt)
    assert [c.shift for c in plan.chunks] == [3, 6, 8]
    _check(cached, prompt, plan, mem)


def test_only_removal_at_the_end_is_plain_prefix_reuse() -> None:
    P, T = list(range(50, 90)), [3, 4, 5, 6, 7]
    cached, prompt = P + T, [*P, 8, 9]
    plan, mem = _run(cached, prompt)
    assert plan == ReusePlan(40)
    _check(cached, prompt, plan, mem)


def test_short_runs_are_not_chunks() -> None:
    cached = [1, 2, 3, 10, 11, 12, 20, 21, 22, 23, 24, 25]
    prompt = [1, 2, 3, 99, 20, 21, 22, 5, 6]
    plan = plan_reuse(cached, prompt, min_chunk=4, end=len(prompt) - 1)
    assert plan == ReusePlan(3)
    assert plan_reuse(cached, [*cached, 1], min_chunk=0).chunks == ()


def test_the_last_prompt_token_is_never_reused() -> None:
    cached = list(range(10)) + list(range(100, 120))
    prompt = [*list(range(10)), 5, *list(range(100, 120))]
    plan = plan_reuse(cached, prompt, min_chunk=4, end=len(prompt) - 1)
    assert plan.end == len(prompt) - 1
    assert plan.chunks == (Chunk(10, 11, 19),)


def test_random_edits_always_leave_the_prompt_in_the_cache() -> None:
    rng = random.Random(7)
    for _ in range(200):
        cached = [rng.randrange(1000) for _ in range(rng.randrange(5, 120))]
        prompt = list(cached)
        for _ in range(rng.randrange(1, 4)):
            a = rng.randrange(len(prompt))
            b = min(len(prompt), a + rng.randrange(0, 30))
            prompt[a:b] = [rng.randrange(1000, 1010) for _ in range(rng.randrange(0, 12))]
        prompt += [rng.randrange(1000) for _ in range(rng.randrange(1, 6))]
        plan, mem = _run(cached, prompt, min_chunk=rng.choice([2, 4, 8]), batch=rng.randrange(1, 9))
        _check(cached, prompt, plan, mem)


def test_cancel_stops_between_batches() -> None:
    cached = [1, 2] + [5] * 3 + list(range(100, 110))
    prompt = [1, 2] + [6] * 9 + list(range(100, 110)) + [0]
    plan = plan_reuse(cached, prompt, min_chunk=4, end=len(prompt) - 1)
    mem = ScriptedMemory.holding(cached)
    calls: list[int] = []
    done = apply_plan(
        mem, plan, prompt, len(cached), batch=2, cancelled=lambda: len(calls) >= 2,
        on_tokens=calls.append,
    )
    assert not done and calls == [2, 2]
    assert not mem.seq(HELPER_SEQ)


def test_a_refused_removal_raises() -> None:
    cached = [1, 2] + [5] * 3 + list(range(100, 110))
    prompt = [1, 2, *list(range(100, 110)), 0]
    plan = plan_reuse(cached, prompt, min_chunk=4, end=len(prompt) - 1)
    mem = ScriptedMemory.holding(cached)
    mem.refuse_rm = True
    with pytest.raises(ReuseFailed):
        apply_plan(mem, plan, prompt, len(cached), batch=8)


def test_a_batch_that_does_not_follow_the_sequence_is_refused() -> None:
    # The scripted cache enforces llama.cpp's rule the helper sequence exists for.
    mem = ScriptedMemory.holding([1, 2, 3, 4])
    mem.seq_rm(MAIN_SEQ, 1, 2)
    with pytest.raises(ReuseFailed):
        mem.decode([9], 1, MAIN_SEQ)
