"""Draft-model speculative decoding: a smaller model with the same vocabulary (Qwen2.5-Coder
0.5B for the 1.5B) proposes the next tokens greedily, and the loaded model checks them in one
batch (:func:`~assistant.llm.llama_speculative.lookup_generate`), so the reply is the one the
loaded model's own sampler chain gives (docs/PERFORMANCE.md, "Draft-model decoding").

The draft model reads only the tail of the context (:data:`WINDOW_MIN` to :data:`WINDOW_MAX`
tokens): a 4,000-token paste costs it a few hundred tokens, not the whole prompt again, and
its guesses depend mostly on the last lines anyway. A worse guess costs speed, never output.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from assistant.llm.cache_reuse import common_prefix
from assistant.llm.llama_vocab import quiet_stderr

log = logging.getLogger(__name__)

#: Longest draft per step; the length adapts between 1 and this to what was accepted.
DRAFT_MODEL_TOKENS = 6
#: The draft stops before a token its model gives less than this probability: an unsure
#: guess is usually rejected, and on a CPU every verified position costs.
P_MIN = 0.6
#: The tail of the context the draft model holds: when it would hold more than
#: ``WINDOW_MAX`` tokens it starts again from the last ``WINDOW_MIN``.
WINDOW_MIN = 256
WINDOW_MAX = 1024
#: Token ids compared between the two vocabularies besides the special ones (every n-th).
_VOCAB_STRIDE = 61


class DraftError(Exception):
    """The draft model cannot be used with this model (its reason in words)."""


class DraftModel:
    """A loaded draft model and its cache of the context's tail; called like
    :class:`~assistant.llm.llama_speculative.PromptLookup` (context in, draft out)."""

    def __init__(self, llama: Any, name: str, max_tokens: int = DRAFT_MODEL_TOKENS) -> None:
        self._llm = llama
        self.name = name
        self.path = str(getattr(llama, "model_path", name))
        self.max_tokens = max(1, max_tokens)
        self.length = min(4, self.max_tokens)
        self._n_vocab = int(llama.n_vocab())
        #: Context position of the first token the draft cache holds, and the tokens held.
        self._anchor = 0
        self._held: list[int] = []

    @classmethod
    def load(
        cls, path: Path, name: str, *, threads: int,
        guard: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
    ) -> DraftModel:
        """Load ``path`` as a draft model (a small context: only the tail is read)."""
        from llama_cpp import Llama

        with quiet_stderr(), (guard() if guard is not None else contextlib.nullcontext()):
            try:
                llama = Llama(
                    model_path=str(path), n_ctx=WINDOW_MAX + 2 * DRAFT_MODEL_TOKENS + 64,
                    n_threads=threads, n_threads_batch=threads, n_batch=512, verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise DraftError(f"llama.cpp could not load {path.name} ({exc})") from exc
        return cls(llama, name)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._llm.close()

    def set_threads(self, threads: int) -> None:
        self._llm._ctx.set_n_threads(threads, threads)

    def check_vocabulary(self, target: Any) -> None:
        """Raise :class:`DraftError` unless ``target`` (a ``Llama``) has this vocabulary:
        its size, type, special tokens and a sample of token texts."""
        import llama_cpp

        mine, theirs = self._llm._model.vocab, target._model.vocab
        if self._n_vocab != int(target.n_vocab()):
            raise DraftError(
                f"its vocabulary has {self._n_vocab:,} tokens, the model's {target.n_vocab():,}"
            )
        if int(llama_cpp.llama_vocab_type(mine)) != int(llama_cpp.llama_vocab_type(theirs)):
            raise DraftError("its tokenizer is of another kind")
        specials = (llama_cpp.llama_vocab_bos, llama_cpp.llama_vocab_eos,
                    llama_cpp.llama_vocab_eot)
        if any(int(f(mine)) != int(f(theirs)) for f in specials):
            raise DraftError("its special tokens differ")
        for token in range(0, self._n_vocab, _VOCAB_STRIDE):
            a = bytes(llama_cpp.llama_vocab_get_text(mine, token))
            if a != bytes(llama_cpp.llama_vocab_get_text(theirs, token)):
                raise DraftError(f"token {token} is another text in it")

    def feedback(self, drafted: int, accepted: int) -> None:
        """How the last draft did: one token longer after a full hit, else what was kept
        plus one (at least one: the confidence cut already skips unsure guesses)."""
        if drafted and accepted == drafted:
            self.length = min(self.max_tokens, self.length + 1)
        elif drafted:
            self.length = max(1, accepted + 1)

    def __call__(self, context: np.ndarray) -> np.ndarray:
        """Up to :attr:`length` tokens the draft model expects after ``context``."""
        if len(context) == 0:
            return context[:0]
        self._sync(context)
        out: list[int] = []
        while len(out) < self.length:
            logits = self._last_logits()
            token = int(np.argmax(logits))
            if _top_probability(logits) < P_MIN:
                break
            out.append(token)
            if len(out) < self.length:
                self._decode([token])
        return np.array(out, dtype=np.intc)

    # -- the draft's cache ----------------------------------------------------------------
    def _sync(self, context: np.ndarray) -> None:
        """Make the draft cache hold ``context`` from the anchor, its last token evaluated."""
        n = len(context)
        if n - self._anchor > WINDOW_MAX or self._anchor >= n:
            self._anchor = max(0, n - WINDOW_MIN)
            self._held = []
            self._llm._ctx.kv_cache_clear()  # other positions now: start again
        want = [int(t) for t in context[self._anchor :]]
        keep = min(common_prefix(self._held, want), len(want) - 1)  # fresh logits for the last
        if keep < len(self._held):
            if keep == 0 or not self._llm._ctx.kv_cache_seq_rm(-1, keep, -1):
                self._llm._ctx.kv_cache_clear()
                keep = 0
            del self._held[keep:]
        step = max(1, int(self._llm.n_batch))
        for at in range(keep, len(want), step):
            self._decode(want[at : at + step])

    def _decode(self, tokens: list[int]) -> None:
        """Evaluate ``tokens`` after the held ones (logits for the last)."""
        llm = self._llm
        llm._batch.set_batch(batch=tokens, n_past=len(self._held), logits_all=False)
        llm._ctx.decode(llm._batch)
        self._held.extend(tokens)

    def _last_logits(self) -> np.ndarray:
        import llama_cpp

        ptr = llama_cpp.llama_get_logits_ith(self._llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,))


def _top_probability(logits: np.ndarray) -> float:
    """The softmax probability of the likeliest token."""
    top = float(logits.max())
    return 1.0 / float(np.exp(logits - top).sum())

