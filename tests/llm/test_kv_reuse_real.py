"""The KV cache on the real model: a saved state restored after a reload, chunk reuse after
a changed span, and the models it must not be used with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant.llm.base import EngineTuning, GenerationOptions, GenerationResult, LLMError
from assistant.llm.kv_state import StateCache
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.llama_kv import LlamaMemory

pytestmark = pytest.mark.integration

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}


def _gen(backend: LlamaBackend, tokens: list[int], n: int) -> GenerationResult:
    result: GenerationResult | None = None
    for event in backend.generate_tokens(tokens, GenerationOptions(n, temperature=0.0)):
        if event.result is not None:
            result = event.result
    assert result is not None
    return result


def _chat(backend: Any, messages: list[dict[str, Any]], n: int) -> GenerationResult:
    return _gen(backend, backend.tokenize_prompt(backend.render_prompt(messages)), n)


def _last_logits(backend: LlamaBackend) -> np.ndarray:
    import llama_cpp

    llm = backend._llm
    n_vocab = int(llm.n_vocab())
    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(n_vocab,)).astype(np.float64).copy()


def _kl(p_logits: np.ndarray, q_logits: np.ndarray) -> float:
    def log_softmax(x: np.ndarray) -> np.ndarray:
        x = x - x.max()
        return x - np.log(np.exp(x).sum())

    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return float((np.exp(lp) * (lp - lq)).sum())


@pytest.fixture
def backend(real_backend: Any) -> Iterator[LlamaBackend]:
    real_backend.reset_kv_cache()
    yield real_backend
    real_backend.tune(EngineTuning())
    real_backend.reset_kv_cache()


def test_a_restored_state_gives_the_same_greedy_reply_evaluating_only_new_tokens(
    backend: LlamaBackend, embedded_model_path: Path, tmp_path: Path
) -> None:
    first = [SYSTEM, {"role": "user", "content": "Tell me three facts about the planet Mars."}]
    reply = _chat(backend, first, 40)
    assert reply.completion_tokens == 40
    cache = StateCache(tmp_path, limit_bytes=10**9)
    saved = backend.save_state()
    assert len(saved.tokens) == reply.prompt_tokens + 39  # the last token is not evaluated
    assert cache.save("chat", saved) is not None

    second = [
        *first,
        {"role": "assistant", "content": reply.text},
        {"role": "user", "content": "Which of them is the most surprising?"},
    ]
    # The chat kept open: the same state still in memory answers the next message.
    live = _chat(backend, second, 32)
    # The chat reopened: a new process loads the model and the saved state.
    reopened = LlamaBackend.load(str(embedded_model_path), n_ctx=8192)
    try:
        state = cache.load("chat", reopened.state_fingerprint())
        assert state is not None
        reopened.load_state(state)
        resumed = _chat(reopened, second, 32)
    finally:
        reopened.close()
    # A restored state is the live one: the same reply, token for token.
    assert resumed.text == live.text
    backend.reset_kv_cache()
    full = _chat(backend, second, 32)
    assert full.prompt_reused == 0
    assert resumed.prompt_tokens == live.prompt_tokens == full.prompt_tokens
    # Only what follows the saved tokens was evaluated.
    new = full.prompt_tokens - len(saved.tokens)
    assert resumed.prompt_reused == live.prompt_reused == len(saved.tokens)
    assert resumed.prompt_evaluated == live.prompt_evaluated == new
    # Against evaluating the whole prompt at once the reply is not compared byte for byte:
    # logits depend on how the prompt is split into batches, and on some CPUs (seen on
    # 2026-11-27, an AMD EPYC with AVX2) the two greedy replies part at the 31st token, "(306"
    # against "(307" (docs/PERFORMANCE.md, "Instant resume"). Their first tokens agree.
    assert resumed.text.split()[:8] == full.text.split()[:8]


def test_a_state_of_another_window_or_damaged_bytes_are_refused(
    backend: LlamaBackend, embedded_model_path: Path, tmp_path: Path
) -> None:
    _chat(backend, [SYSTEM, {"role": "user", "content": "Hello there."}], 4)
    saved = backend.save_state()
    cache = StateCache(tmp_path, limit_bytes=10**9)
    cache.save("chat", saved)
    small = LlamaBackend.load(str(embedded_model_path), n_ctx=4096)
    try:
        assert small.state_fingerprint() != backend.state_fingerprint()
        assert cache.load("chat", small.state_fingerprint()) is None
        with pytest.raises(LLMError):
            small.load_state(saved)
        assert small.cached_prefix(saved.tokens) == 0
    finally:
        small.close()
    from dataclasses import replace

    with pytest.raises(LLMError):
        backend.load_state(replace(saved, data=saved.data[: len(saved.data) // 2]))
    assert backend.cached_prefix(saved.tokens) == 0  # left empty, not half-loaded


def test_chunk_reuse_with_a_removal_at_the_end_equals_full_evaluation(
    backend: LlamaBackend,
) -> None:
    """The changed span is the end of the cache (an earlier reply replaced): moving nothing
    is right, and the continuation is exactly that of a full evaluation."""
    backend.tune(EngineTuning(chunk_reuse=True, min_chunk=8))
    start = [SYSTEM, {"role": "user", "content": "List the planets of the solar system."}]
    _chat(backend, [*start, {"role": "assistant", "content": "Mercury, Venus, Earth and so on."},
                    {"role": "user", "content": "Now in reverse order, please, all of them."}], 8)
    changed = [*start, {"role": "assistant", "content": "Mercury, Venus, Earth, Mars."},
               {"role": "user", "content": "Which one is the largest?"}]
    tokens = backend.tokenize_prompt(backend.render_prompt(changed))
    kept = backend.cached_prefix(tokens)
    reused = _gen(backend, tokens, 32)
    assert reused.prompt_reused == kept > 0 and reused.prompt_shifted == 0
    assert reused.prompt_evaluated == len(tokens) - kept
    backend.reset_kv_cache()
    full = _gen(backend, tokens, 32)
    assert reused.text == full.text and full.completion_tokens > 0


def _read_turns(output: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "data.txt"}'}}
    return [
        SYSTEM,
        {"role": "user", "content": "Read data.txt"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": output},
        {"role": "assistant", "content": "I have read data.txt; it lists 60 items with "
         "values. The first item has value 0 and the list goes on for a while."},
        {"role": "user", "content": "Thanks. Now tell me a short fact about Mars."},
    ]


def test_a_pruned_output_is_skipped_by_moving_what_follows(backend: LlamaBackend) -> None:
    data = "\n".join(f"line {i}: the value of item {i} is {i * 7 % 13}" for i in range(60))
    before = _read_turns(data)
    after = [
        *_read_turns("[Old tool result content cleared]"),
        {"role": "assistant", "content": "Mars is red."},
        {"role": "user", "content": "And about Venus?"},
    ]
    old = backend.tokenize_prompt(backend.render_prompt(before))
    new = backend.tokenize_prompt(backend.render_prompt(after))
    backend.tune(EngineTuning(chunk_reuse=True, min_chunk=16))
    _gen(backend, old, 1)
    prefix = backend.cached_prefix(new)
    moved = _gen(backend, new, 1)
    moved_logits = _last_logits(backend)
    # The reply after the output (and the question) were moved, not evaluated again.
    assert moved.prompt_shifted >= 40
    assert moved.prompt_reused == prefix + moved.prompt_shifted
    assert moved.prompt_evaluated == len(new) - moved.prompt_reused
    assert moved.prompt_evaluated < len(new) - prefix - 40
    memory = LlamaMemory(backend._llm, 8)
    try:  # the cache holds exactly the prompt's positions, and the bookkeeping agrees
        held = int(backend._llm.n_tokens)
        assert memory.positions() == (0, held - 1)
        assert backend.cached_prefix(new) == len(new)
    finally:
        memory.close()
    # A next call extends it as usual.
    more = [*after, {"role": "assistant", "content": "Venus is hot."},
            {"role": "user", "content": "Thanks."}]
    nxt = _gen(backend, backend.tokenize_prompt(backend.render_prompt(more)), 1)
    assert nxt.prompt_reused >= len(new) - 1 and nxt.prompt_shifted == 0
    # Approximate, but close: the same next token as a full evaluation, a small KL.
    backend.tune(EngineTuning())
    backend.reset_kv_cache()
    _gen(backend, new, 1)
    full_logits = _last_logits(backend)
    assert int(full_logits.argmax()) == int(moved_logits.argmax())
    assert _kl(full_logits, moved_logits) < 1.0


def test_chunk_reuse_is_refused_for_sliding_window_models() -> None:
    from assistant.llm.registry import resolve_model

    path, _entry = resolve_model("gemma-3-270m")
    if not path.exists():
        pytest.skip("gemma-3-270m is not provisioned")
    gemma = LlamaBackend.load("gemma-3-270m", n_ctx=2048)
    try:
        assert gemma.chunk_reuse_blocker == "the model uses sliding-window attention"
        text = gemma.tune(EngineTuning(chunk_reuse=True, min_chunk=8))
        assert gemma.chunk_reuse == 0 and "unavailable (the model uses sliding-window" in text
        # Prefix reuse still works.
        msgs = [{"role": "user", "content": "Hello there, how are you today?"}]
        _chat(gemma, msgs, 2)
        follow = [*msgs, {"role": "assistant", "content": "Fine."},
                  {"role": "user", "content": "Good. Now name three colours."}]
        again = _chat(gemma, follow, 2)
        assert again.prompt_reused > 0 and again.prompt_shifted == 0
        # Its state (a sliding-window cache beside the full one) saves and loads too.
        saved = gemma.save_state()
        live = _chat(gemma, follow, 12)
        gemma.reset_kv_cache()
        gemma.load_state(saved)
        restored = _chat(gemma, follow, 12)
        # The restored cache serves the whole prompt as the live one did (all but the last
        # token, evaluated again for its logits), and the reply is the same.
        assert restored.prompt_reused == live.prompt_reused == restored.prompt_tokens - 1
        assert len(saved.tokens) >= restored.prompt_tokens and restored.text == live.text
    finally:
        gemma.close()
