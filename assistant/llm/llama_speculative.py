"""Prompt-lookup speculative decoding for the embedded engine: a draft taken from the
context is evaluated in one batch with the sampled token, and kept while it is what the same
sampler chain samples (how, why not ``draft_model=``, what it gains per model:
docs/PERFORMANCE.md, "Prompt-lookup decoding").
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from assistant.llm.cache_reuse import common_prefix
from assistant.llm.llama_kv import keep_prefix

#: Longest draft, and the n-gram sizes looked up (longest first). One-token matches are not
#: used: in code a single token (an indent, a bracket) repeats everywhere and drafts noise.
DRAFT_TOKENS = 10
NGRAM_MAX = 4
NGRAM_MIN = 2


@dataclass
class DraftStats:
    """What speculation did in one reply (for the benchmark and the log)."""

    steps: int = 0
    drafted: int = 0
    accepted: int = 0

    @property
    def acceptance(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0


class Drafter(Protocol):
    """Proposes the tokens after a context and learns how the last proposal did."""

    def __call__(self, context: np.ndarray) -> np.ndarray: ...

    def feedback(self, drafted: int, accepted: int) -> None: ...


class FirstDraft:
    """Several drafters in order: the first that proposes anything drafts (prompt lookup,
    free, before a draft model, which costs a decode per token); feedback goes to it."""

    def __init__(self, *drafters: Drafter) -> None:
        self.drafters = drafters
        self._last: Drafter | None = None

    def __call__(self, context: np.ndarray) -> np.ndarray:
        for drafter in self.drafters:
            draft = drafter(context)
            if len(draft):
                self._last = drafter
                return draft
        self._last = None
        return context[:0]

    def feedback(self, drafted: int, accepted: int) -> None:
        if self._last is not None:
            self._last.feedback(drafted, accepted)


class PromptLookup:
    """Drafts the tokens that followed the latest earlier occurrence of the context's last
    ``NGRAM_MAX``..``NGRAM_MIN`` tokens: the latest is the one a reply most likely quotes (the
    file as last read), unlike llama-cpp-python's ``LlamaPromptLookupDecoding`` (the earliest)."""

    def __init__(self, max_tokens: int = DRAFT_TOKENS) -> None:
        self.max_tokens = max(1, max_tokens)
        self.length = self.max_tokens

    def feedback(self, drafted: int, accepted: int) -> None:
        """How the last draft did: the next one is longer after a full hit, else shorter."""
        if drafted and accepted == drafted:
            self.length = min(self.max_tokens, self.length + 2)
        elif drafted:
            self.length = max(2, accepted + 1)

    def __call__(self, context: np.ndarray) -> np.ndarray:
        n = len(context)
        for size in range(min(NGRAM_MAX, n - 1), NGRAM_MIN - 1, -1):
            tail = context[n - size :]
            windows = np.lib.stride_tricks.sliding_window_view(context[: n - 1], size)
            hits = np.flatnonzero((windows == tail).all(axis=1))
            if len(hits):
                start = int(hits[-1]) + size
                return context[start : min(n, start + self.length)]
        return context[:0]


def lookup_generate(
    llm: Any,
    tokens: list[int],
    drafter: Drafter,
    stats: DraftStats,
    **sampling: Any,
) -> Generator[int, Any, None]:
    """Tokens sampled after ``tokens`` (like ``llm.generate(tokens, reset=True, ...)``),
    several per model call where the drafter (prompt lookup, a draft model) guesses right;
    the tokens are what the sampler chain samples at each position, so at temperature 0 the
    reply is plain decoding's (exactly with flat weights, docs/PERFORMANCE.md);
    ``sampling``: the arguments of ``Llama._init_sampler``."""
    n_ctx = int(llm.n_ctx())
    cached = int(llm.n_tokens)
    prefix = min(common_prefix(llm.input_ids[:cached], tokens), cached, len(tokens) - 1)
    if prefix < cached:
        keep_prefix(llm, prefix)
    sampler = llm._init_sampler(**sampling)
    try:
        llm.eval(tokens[int(llm.n_tokens) :])  # the prompt's tail: logits for its last token
        token = int(sampler.sample(llm._ctx, -1))
        while True:
            yield token
            n_past = int(llm.n_tokens)
            room = n_ctx - n_past - 1
            if room < 0:
                return
            context = np.append(llm.input_ids[:n_past], np.intc(token)).astype(np.intc)
            draft = [int(t) for t in drafter(context)[: min(room, int(llm.n_batch) - 1)]]
            batch = [token, *draft]
            llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=True)
            llm._ctx.decode(llm._batch)
            llm.input_ids[n_past : n_past + len(batch)] = batch
            llm.n_tokens = n_past + len(batch)
            llm._requires_eval = False
            stats.steps += 1
            stats.drafted += len(draft)
            for i in range(len(batch)):
                token = int(sampler.sample(llm._ctx, i - len(batch)))
                if i + 1 < len(batch) and batch[i + 1] == token:
                    stats.accepted += 1
                    yield token  # already in the cache, as batch[i + 1]
                    continue
                keep = n_past + i + 1  # the cache is right up to batch[i]
                if keep < llm.n_tokens:
                    keep_prefix(llm, keep)
                drafter.feedback(len(draft), i)
                break
    finally:
        sampler.close()
