"""Sampling under a GBNF grammar, fast enough for a CPU: the sampled token is checked first,
then a shortlist, the whole vocabulary last (llama-cpp-python's chain checked every token at
every step: 0.5-1.5 s a token with SmolLM2; docs/PERFORMANCE.md, "Grammar sampling").
"""

from __future__ import annotations

import ctypes
import importlib
from typing import Any

import numpy as np

from assistant.llm.base import GrammarError

#: Tokens the grammar is applied to when the sampled one is not allowed.
SHORTLIST = 512
_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class _Candidates:
    """A ``llama_token_data_array`` over a numpy buffer of ``size`` entries."""

    def __init__(self, lc: Any, size: int) -> None:
        self.buf = np.zeros(size, dtype=_TOKEN_DATA)
        self.array = lc.llama_token_data_array(
            data=self.buf.ctypes.data_as(lc.llama_token_data_p), size=size, selected=-1,
            sorted=False,
        )
        self.ref = ctypes.byref(self.array)

    def load(self, ids: np.ndarray[Any, Any], logits: np.ndarray[Any, Any]) -> None:
        n = len(ids)
        self.buf["id"][:n] = ids
        self.buf["logit"][:n] = logits
        self.buf["p"][:n] = 0.0
        self.array.size = n
        self.array.selected = -1
        self.array.sorted = False

    def logits(self) -> np.ndarray[Any, Any]:
        return self.buf["logit"][: self.array.size]

    def selected(self) -> int:
        return int(self.buf["id"][self.array.selected])

    def allows(self, lc: Any, grammar: Any, token: int) -> bool:
        """Whether the ``grammar`` sampler allows ``token`` next (loads it alone)."""
        self.load(np.array([token], dtype=np.intc), np.array([1.0], dtype=np.single))
        lc.llama_sampler_apply(grammar, self.ref)
        return bool(np.isfinite(self.buf["logit"][0]))


class GrammarSampler:
    """Picks the next token of a ``Llama`` under ``grammar``: :meth:`sample` reads the last
    evaluated token's logits; :meth:`accept` the token before evaluating it; then :meth:`close`.
    """

    def __init__(
        self,
        llama: Any,
        grammar: str,
        *,
        temperature: float,
        top_p: float,
        top_k: int = 40,
        min_p: float = 0.05,
        repeat_penalty: float = 1.1,
        seed: int = 0,
    ) -> None:
        llama_cpp: Any = importlib.import_module("llama_cpp")
        internals: Any = importlib.import_module("llama_cpp._internals")

        self._lc = llama_cpp
        self._ctx = llama._ctx.ctx
        self._n_vocab = int(llama.n_vocab())
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            llama._model.vocab, grammar.encode("utf-8"), b"root"
        )
        if not self._grammar:
            raise GrammarError("llama.cpp cannot parse the grammar")
        # The same penalty and sampler settings as Llama.generate builds.
        self._penalty = internals.LlamaSampler()
        self._penalty.add_penalties(
            n_vocab=self._n_vocab, penalty_last_n=int(llama.last_n_tokens_size),
            penalty_repeat=repeat_penalty, penalty_freq=0.0, penalty_present=0.0,
        )
        self._pick = internals.LlamaSampler()
        if temperature <= 0.0:
            self._pick.add_greedy()
        else:
            self._pick.add_top_k(top_k)
            self._pick.add_typical(1.0, 1)
            self._pick.add_top_p(top_p, 1)
            self._pick.add_min_p(min_p, 1)
            self._pick.add_temp(temperature)
            self._pick.add_dist(seed)
        self._all = _Candidates(llama_cpp, self._n_vocab)
        self._short = _Candidates(llama_cpp, min(SHORTLIST, self._n_vocab))
        self._one = _Candidates(llama_cpp, 1)
        self._ids = np.arange(self._n_vocab, dtype=np.intc)
        #: Steps where the sampled token was allowed / needed the shortlist / the vocabulary.
        self.stats = {"direct": 0, "shortlist": 0, "full": 0}

    def _penalized(self) -> np.ndarray[Any, Any]:
        """The last token's logits after the repetition penalty (indexed by token id)."""
        lc = self._lc
        raw = np.ctypeslib.as_array(lc.llama_get_logits_ith(self._ctx, -1), shape=(self._n_vocab,))
        self._all.load(self._ids, raw)
        lc.llama_sampler_apply(self._penalty.sampler, self._all.ref)
        out = np.empty(self._n_vocab, dtype=np.single)
        out[self._all.buf["id"][: self._all.array.size]] = self._all.logits()
        return out

    def _pick_from(self, cand: _Candidates) -> int | None:
        """Apply the grammar then the sampler to ``cand``; None if nothing is allowed."""
        lc = self._lc
        lc.llama_sampler_apply(self._grammar, cand.ref)
        if not np.isfinite(cand.logits()).any():
            return None
        lc.llama_sampler_apply(self._pick.sampler, cand.ref)
        return cand.selected()

    def sample(self) -> int:
        lc = self._lc
        logits = self._penalized()
        self._all.load(self._ids, logits)
        lc.llama_sampler_apply(self._pick.sampler, self._all.ref)
        token = self._all.selected()
        if self._one.allows(lc, self._grammar, token):
            self.stats["direct"] += 1
            return token
        n = len(self._short.buf)
        top = np.argpartition(logits, -n)[-n:].astype(np.intc)
        self._short.load(top, logits[top])
        got = self._pick_from(self._short)
        if got is not None:
            self.stats["shortlist"] += 1
            return got
        self._all.load(self._ids, logits)
        got = self._pick_from(self._all)
        if got is None:
            raise GrammarError("the grammar allows no token of this model's vocabulary here")
        self.stats["full"] += 1
        return got

    def accept(self, token: int) -> None:
        lc = self._lc
        lc.llama_sampler_accept(self._grammar, token)
        lc.llama_sampler_accept(self._penalty.sampler, token)
        lc.llama_sampler_accept(self._pick.sampler, token)

    def close(self) -> None:
        if self._grammar:
            self._lc.llama_sampler_free(self._grammar)
            self._grammar = None
        self._penalty.close()
        self._pick.close()

