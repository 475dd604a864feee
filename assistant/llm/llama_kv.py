"""The llama.cpp side of the KV cache, reading the ``Llama`` object's internals: context
parameters, chunk moves, saved states (each part: docs/ARCHITECTURE.md, "The KV cache").
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from assistant.llm.cache_reuse import MAIN_SEQ, ReuseFailed

#: K-cache types whose cells can be rotated exactly (f32, f16, bf16).
_FLOAT_TYPES = frozenset({0, 1, 30})


@dataclass(frozen=True)
class PrefillConfig:
    """How llama.cpp evaluates a prompt: CPU threads, tokens per call (``n_batch``) and per
    compute step (``n_ubatch``, at most ``n_batch``)."""

    threads: int
    n_batch: int
    n_ubatch: int

    def __post_init__(self) -> None:
        if self.threads < 1 or self.n_batch < 1 or self.n_ubatch < 1:
            raise ValueError(f"prefill settings must be positive: {self}")
        if self.n_ubatch > self.n_batch:
            object.__setattr__(self, "n_ubatch", self.n_batch)

    def describe(self) -> str:
        return f"{self.threads} threads, n_batch {self.n_batch}, n_ubatch {self.n_ubatch}"


def open_context(llm: Any, config: PrefillConfig, n_ctx: int | None = None) -> None:
    """Replace ``llm``'s context (freed first: no KV buffer allocated twice) by an empty one
    of ``n_ctx`` tokens (default: the same) with ``config`` and two sequences in one cache
    (the chat's and chunk reuse's helper)."""
    import llama_cpp
    import numpy as np
    from llama_cpp import _internals

    params = llm.context_params
    if n_ctx is not None:
        params.n_ctx = n_ctx
    n_batch = min(config.n_batch, int(params.n_ctx))
    params.n_batch = n_batch
    params.n_ubatch = min(config.n_ubatch, n_batch)
    params.n_threads = config.threads
    params.n_threads_batch = config.threads
    params.n_seq_max = 2
    params.kv_unified = True
    llm._ctx.close()
    llm._ctx = None
    ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
    llm._ctx = llm._stack.enter_context(contextlib.closing(ctx))
    if n_batch != llm.n_batch:
        batch = _internals.LlamaBatch(
            n_tokens=n_batch, embd=0, n_seq_max=int(params.n_ctx), verbose=False
        )
        llm._batch.close()
        llm._batch = llm._stack.enter_context(contextlib.closing(batch))
        llm.n_batch = n_batch
        if not llm._logits_all:
            llm.scores = np.ndarray((n_batch, llm._n_vocab), dtype=np.single)
    size = int(llm._ctx.n_ctx())
    if size != len(llm.input_ids):
        llm.input_ids = np.zeros((size,), dtype=np.intc)
        llm._n_ctx = size
    llm.n_threads = llm.n_threads_batch = config.threads
    llm.n_tokens = 0
    llm._requires_eval = True
    if int(llama_cpp.llama_n_seq_max(llm._ctx.ctx)) < 2:  # pragma: no cover - old llama.cpp
        raise RuntimeError("llama.cpp gave the context a single sequence")


def current_config(llm: Any) -> PrefillConfig:
    params = llm.context_params
    return PrefillConfig(int(params.n_threads_batch), int(params.n_batch), int(params.n_ubatch))


def set_threads(llm: Any, threads: int) -> None:
    """Change the CPU threads without a new context."""
    llm._ctx.set_n_threads(threads, threads)
    llm.context_params.n_threads = llm.context_params.n_threads_batch = threads
    llm.n_threads = llm.n_threads_batch = threads


def keep_prefix(llm: Any, n: int) -> bool:
    """Cut the cache back to its first ``n`` tokens; False when it was emptied instead."""
    if n > 0 and llm._ctx.kv_cache_seq_rm(-1, n, -1):
        llm.n_tokens = n
        return True
    llm.reset()
    return False


def reuse_blocker(llm: Any) -> str | None:
    """Why cached chunks must not (or cannot) be moved for this model; None if they can."""
    import llama_cpp

    model = llm._model.model
    ctx = llm._ctx.ctx
    if int(llama_cpp.llama_model_n_swa(model)) > 0:
        return "the model uses sliding-window attention"
    if llama_cpp.llama_model_is_recurrent(model) or llama_cpp.llama_model_is_hybrid(model):
        return "the model has recurrent memory"
    if int(llm.context_params.type_k) not in _FLOAT_TYPES:
        return "the K cache is quantized"
    mem = llama_cpp.llama_get_memory(ctx)
    if mem is None or not llama_cpp.llama_memory_can_shift(mem):
        return "llama.cpp cannot shift this model's cache"
    if int(llama_cpp.llama_n_seq_max(ctx)) < 2:
        return "the context has a single sequence"
    return None


class LlamaMemory:
    """:class:`~assistant.llm.cache_reuse.KVMemory` on a ``Llama`` context; one per use,
    then :meth:`close` (it holds a batch)."""

    def __init__(self, llm: Any, capacity: int) -> None:
        import llama_cpp

        self._lc = llama_cpp
        self._ctx = llm._ctx.ctx
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self._capacity = max(1, capacity)
        self._batch: Any = llama_cpp.llama_batch_init(self._capacity, 0, 2)

    def close(self) -> None:
        if self._batch is not None:
            self._lc.llama_batch_free(self._batch)
            self._batch = None

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        return bool(self._lc.llama_memory_seq_rm(self._mem, seq, p0, p1))

    def seq_add(self, seq: int, p0: int, p1: int, delta: int) -> None:
        self._lc.llama_memory_seq_add(self._mem, seq, p0, p1, delta)

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        self._lc.llama_memory_seq_cp(self._mem, src, dst, p0, p1)

    def decode(
        self, tokens: Sequence[int], pos: int, seq: int, *, all_logits: bool = False
    ) -> None:
        """Evaluate ``tokens`` from ``pos`` in ``seq`` (logits: the last, or all)."""
        n = len(tokens)
        if n == 0:
            return
        if n > self._capacity:
            raise ReuseFailed(f"{n} tokens do not fit a batch of {self._capacity}")
        batch = self._batch
        batch.n_tokens = n
        for i, token in enumerate(tokens):
            batch.token[i] = token
            batch.pos[i] = pos + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = all_logits
        batch.logits[n - 1] = True
        rc = int(self._lc.llama_decode(self._ctx, batch))
        if rc != 0:
            raise ReuseFailed(f"llama_decode returned {rc} at position {pos}")

    def positions(self, seq: int = MAIN_SEQ) -> tuple[int, int]:
        """(lowest, highest) position held by ``seq``; (-1, -1) when empty."""
        lc = self._lc
        return int(lc.llama_memory_seq_pos_min(self._mem, seq)), int(
            lc.llama_memory_seq_pos_max(self._mem, seq)
        )


def read_state(llm: Any) -> bytearray:
    """The chat sequence's used cells, serialized by llama.cpp into the returned buffer."""
    import llama_cpp

    ctx = llm._ctx.ctx
    size = int(llama_cpp.llama_state_seq_get_size(ctx, MAIN_SEQ))
    data = bytearray(size)
    buf = (ctypes.c_uint8 * size).from_buffer(data)
    written = int(llama_cpp.llama_state_seq_get_data(ctx, buf, size, MAIN_SEQ))
    del buf  # release the export before resizing
    if written <= 0 or written > size:
        raise RuntimeError("llama.cpp could not copy the KV state")
    del data[written:]
    return data


def write_state(llm: Any, data: bytes | bytearray) -> bool:
    """Replace the cache by a :func:`read_state` copy; False (cache emptied) if refused."""
    import llama_cpp

    ctx = llm._ctx.ctx
    mem = llama_cpp.llama_get_memory(ctx)
    llama_cpp.llama_memory_clear(mem, True)
    if isinstance(data, bytearray):
        buf = (ctypes.c_uint8 * len(data)).from_buffer(data)
    else:
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    if int(llama_cpp.llama_state_seq_set_data(ctx, buf, len(data), MAIN_SEQ)) == 0:
        llama_cpp.llama_memory_clear(mem, True)
        return False
    return True


def evaluation_settings(llm: Any) -> dict[str, str]:
    """What a saved state depends on besides the model file (not threads and batch sizes:
    they change rounding, not what a cell means)."""
    p = llm.context_params
    return {
        "n_ctx": str(int(p.n_ctx)),
        "type_k": str(int(p.type_k)),
        "type_v": str(int(p.type_v)),
        "flash_attn": str(int(p.flash_attn_type)),
        "rope": f"{p.rope_scaling_type}/{p.rope_freq_base}/{p.rope_freq_scale}",
        "yarn": f"{p.yarn_ext_factor}/{p.yarn_attn_factor}/{p.yarn_orig_ctx}",
        "swa_full": str(bool(p.swa_full)),
        "llama_cpp_python": llama_cpp_version(),
    }


def llama_cpp_version() -> str:
    """The installed llama-cpp-python's version ("unknown" for a vendored build)."""
    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:  # pragma: no cover - vendored build
        return "unknown"


# -- raw prompt evaluation, timed (calibration and the benchmark) ---------------------------
def measure_prefill(llm: Any, config: PrefillConfig, tokens: list[int]) -> float:
    """Tokens per second of :func:`decode_timed` on ``tokens``."""
    pieces = decode_timed(llm, config, tokens)
    elapsed = sum(seconds for _n, seconds in pieces)
    return len(tokens) / elapsed if elapsed > 0 else 0.0


def decode_timed(
    llm: Any, config: PrefillConfig, tokens: list[int], piece: int | None = None
) -> list[tuple[int, float]]:
    """(tokens, seconds) of each ``piece`` (default: one) of a ``llama_decode`` of ``tokens``
    in a temporary context with ``config``; the chat's context is not touched."""
    import llama_cpp

    base = llm.context_params
    params = llama_cpp.llama_context_default_params()
    for name in ("type_k", "type_v", "flash_attn_type", "rope_scaling_type", "rope_freq_base",
                 "rope_freq_scale", "swa_full"):
        setattr(params, name, getattr(base, name))
    params.n_ctx = len(tokens) + 64
    params.n_batch = config.n_batch
    params.n_ubatch = min(config.n_ubatch, config.n_batch)
    params.n_threads = params.n_threads_batch = config.threads
    params.no_perf = True
    ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
    if ctx is None:
        raise RuntimeError(f"llama.cpp could not make a context for {config.describe()}")
    step = piece or len(tokens)
    out: list[tuple[int, float]] = []
    try:
        arr = (llama_cpp.llama_token * len(tokens))(*tokens)
        done = 0
        while done < len(tokens):
            begin, end = done, min(done + step, len(tokens))
            start = time.perf_counter()
            while done < end:
                n = min(config.n_batch, end - done)
                batch = llama_cpp.llama_batch_get_one(
                    ctypes.cast(
                        ctypes.addressof(arr) + done * ctypes.sizeof(llama_cpp.llama_token),
                        llama_cpp.llama_token_p,
                    ),
                    n,
                )
                rc = int(llama_cpp.llama_decode(ctx, batch))
                if rc != 0:
                    raise RuntimeError(f"llama_decode returned {rc}")
                done += n
            out.append((done - begin, time.perf_counter() - start))
    finally:
        llama_cpp.llama_free(ctx)
    return out
