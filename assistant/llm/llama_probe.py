"""Next-token distributions of the real model, for ``bench.reuse_quality`` to compare a
prompt evaluated from scratch with the same prompt served by chunk reuse; it drives the
backend's own prefill, so it measures what the app does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from assistant.llm.cache_reuse import MAIN_SEQ, ReusePlan
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.llama_kv import LlamaMemory, keep_prefix

Logits = npt.NDArray[np.float64]


class LogitProbe:
    """Evaluate prompts on ``backend`` and read the logits. Leaves chunk reuse off."""

    def __init__(self, backend: LlamaBackend) -> None:
        import llama_cpp

        self._lc = llama_cpp
        self.backend = backend
        self._llm: Any = backend._llm
        self.n_vocab = int(self._llm.n_vocab())

    def _logits(self, index: int = -1) -> Logits:
        ptr = self._lc.llama_get_logits_ith(self._llm._ctx.ctx, index)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float64)

    def _decode(self, tokens: Sequence[int], all_logits: bool) -> None:
        """Evaluate ``tokens`` after what the cache holds (one batch)."""
        llm = self._llm
        n, pos = len(tokens), int(llm.n_tokens)
        memory = LlamaMemory(llm, n)
        try:
            memory.decode(tokens, pos, MAIN_SEQ, all_logits=all_logits)
        finally:
            memory.close()
        llm.input_ids[pos : pos + n] = tokens
        llm.n_tokens = pos + n

    def hold(self, tokens: Sequence[int]) -> None:
        """Make the cache hold exactly ``tokens``, evaluated from scratch."""
        self.backend.reset_kv_cache()
        self.backend.tune_chunk_reuse(0)
        step = int(self._llm.n_batch)
        self._llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        for start in range(0, len(tokens), step):
            self._decode(tokens[start : start + step], all_logits=False)

    def prompt(self, tokens: list[int], min_chunk: int) -> tuple[ReusePlan, Logits]:
        """Evaluate ``tokens`` as the app does (chunk reuse with ``min_chunk``, 0: prefix
        only): the plan used and the next-token logits."""
        backend = self.backend
        backend.tune_chunk_reuse(min_chunk)
        try:
            plan, finished = backend._prefill(tokens, None, None)
        finally:
            backend.tune_chunk_reuse(0)
        if not finished:  # pragma: no cover - no cancel token was given
            raise RuntimeError("prefill did not finish")
        self.rewind(len(tokens) - 1)
        self._decode(tokens[-1:], all_logits=False)
        return plan, self._logits()

    def greedy(self, first: Logits, count: int) -> tuple[list[int], list[Logits]]:
        """``count`` greedy tokens from the prompt's logits, and the logits before each."""
        tokens: list[int] = []
        logits = [first]
        current = first
        for i in range(count):
            token = int(current.argmax())
            tokens.append(token)
            if i < count - 1:
                self._decode([token], all_logits=False)
                current = self._logits()
                logits.append(current)
        return tokens, logits

    def rewind(self, n_tokens: int) -> None:
        keep_prefix(self._llm, n_tokens)

    def forced(self, tokens: Sequence[int]) -> list[Logits]:
        """Feed ``tokens`` after the cache (one batch): the logits after each."""
        if not tokens:
            return []
        self._decode(tokens, all_logits=True)
        return [self._logits(i) for i in range(len(tokens))]
