"""Stop inside one llama.cpp decode (the abort callback, assistant/llm/llama_abort.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.llm.base import CancelToken, GenerationOptions, GenerationResult
from assistant.llm.llama_abort import AbortSwitch


def test_cancel_listeners_run_once_and_can_be_removed() -> None:
    token = CancelToken()
    calls: list[str] = []
    remove = token.on_cancel(lambda: calls.append("a"))
    token.on_cancel(lambda: calls.append("b"))
    remove()
    token.cancel()
    assert calls == ["b"]
    token.on_cancel(lambda: calls.append("late"))  # already cancelled: called at once
    assert calls == ["b", "late"]


def test_the_switch_is_raised_only_while_armed() -> None:
    switch = AbortSwitch()
    assert switch.kind in ("c", "python")
    token = CancelToken()

    class FakeLlama:  # install() needs only a pointer it can hand to llama.cpp
        pass

    import ctypes

    import llama_cpp

    calls: list[Any] = []
    real = llama_cpp.llama_set_abort_callback
    llama_cpp.llama_set_abort_callback = lambda *a: calls.append(a)  # type: ignore[assignment]
    try:
        with switch.armed(ctypes.c_void_p(1234), token):
            assert not switch.raised
            token.cancel()
            assert switch.raised
            # The C callback reads the same byte: strlen over the flag buffer is 1.
            assert switch._callback(switch._data) is True
        assert not switch.raised
        assert switch._callback(switch._data) is False
        with switch.armed(ctypes.c_void_p(1234), CancelToken()):
            assert not switch.raised  # a stale Stop never aborts the next call
    finally:
        llama_cpp.llama_set_abort_callback = real  # type: ignore[assignment]
    assert len(calls) == 1  # installed once per context


@pytest.fixture(scope="module")
def one_chunk_backend(embedded_model_path: Path) -> Iterator[Any]:
    """A model whose prompts are evaluated in one llama_decode (n_batch 4096): only the
    abort callback can stop such a prefill before its end."""
    from assistant.llm.llama_backend import LlamaBackend

    backend = LlamaBackend.load(str(embedded_model_path), n_ctx=4608, n_batch=4096,
                                n_ubatch=512)
    yield backend
    backend.close()


def _stream(backend: Any, msgs: list[dict[str, str]], cancel: CancelToken,
            on_prefill: Any = None, max_tokens: int = 8) -> tuple[str, GenerationResult]:
    text = ""
    result: GenerationResult | None = None
    for ev in backend.generate(msgs, GenerationOptions(max_tokens, temperature=0.0),
                               cancel=cancel, on_prefill=on_prefill):
        text += ev.delta
        if ev.result is not None:
            result = ev.result
    assert result is not None
    return text, result


def test_a_switch_turned_off_is_never_raised_nor_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``LlamaBackend.use_abort_callback(False)`` (the benchmark's comparison): Stop no
    longer reaches llama.cpp inside a decode."""
    import ctypes

    import llama_cpp

    calls: list[Any] = []
    monkeypatch.setattr(llama_cpp, "llama_set_abort_callback", lambda *a: calls.append(a))
    switch = AbortSwitch()
    switch.enabled = False
    token = CancelToken()
    with switch.armed(ctypes.c_void_p(4321), token):
        token.cancel()
        assert not switch.raised
    assert calls == []


@pytest.mark.integration
def test_stop_aborts_a_prefill_inside_its_decode(one_chunk_backend: Any) -> None:
    backend = one_chunk_backend
    backend.reset_kv_cache()
    long = "The quick brown fox jumps over the lazy dog near the river bank. " * 250
    msgs = [{"role": "user", "content": long + " Summarize."}]
    cancel = CancelToken()
    stopped_at: list[float] = []

    def press_stop() -> None:
        time.sleep(0.1)
        stopped_at.append(time.perf_counter())
        cancel.cancel()

    def started(done: int, total: int) -> None:
        if not stopped_at and done == 0:
            threading.Thread(target=press_stop, daemon=True).start()

    _, result = _stream(backend, msgs, cancel, started)
    latency = time.perf_counter() - stopped_at[0]
    print(f"stop latency inside one {result.prompt_tokens}-token decode: {latency * 1000:.0f} ms")
    assert result.finish_reason == "cancelled"
    assert result.completion_tokens == 0
    # The one chunk was aborted: nothing of it was kept, and the cache holds what it says.
    assert result.prompt_evaluated == 0
    assert backend.cached_tokens() == []
    # The chat stays usable: the next call answers as on a fresh cache.
    short = [{"role": "user", "content": "What is the capital of France?"}]
    after, _ = _stream(backend, short, CancelToken())
    backend.reset_kv_cache()
    fresh, _ = _stream(backend, short, CancelToken())
    assert after == fresh and after.strip()


@pytest.mark.integration
def test_stop_aborts_generation_and_the_reply_so_far_is_kept(one_chunk_backend: Any) -> None:
    backend = one_chunk_backend
    backend.reset_kv_cache()
    msgs = [{"role": "user", "content": "Write a long story about a dragon and a knight."}]
    cancel = CancelToken()
    deltas = 0
    result: GenerationResult | None = None
    text = ""
    for ev in backend.generate(msgs, GenerationOptions(200), cancel=cancel):
        text += ev.delta
        if ev.delta:
            deltas += 1
            if deltas == 5:
                cancel.cancel()
        if ev.result is not None:
            result = ev.result
    assert result is not None and result.finish_reason == "cancelled"
    assert text and result.completion_tokens <= 7
