"""Integration tests with the real embedded model (SmolLM2-135M-Instruct)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from assistant.llm.base import (
    CancelToken,
    ContextOverflowError,
    GenerationOptions,
    GenerationResult,
    KVCacheAware,
    ModelLoadError,
)
from assistant.llm.llama_backend import LlamaBackend

pytestmark = pytest.mark.integration

SYSTEM = "You are a helpful assistant. Answer briefly and accurately."


def _run(
    backend: Any,
    messages: list[dict[str, str]],
    cancel: CancelToken | None = None,
    on_prefill: Any = None,
    **options: Any,
) -> tuple[str, GenerationResult]:
    text = ""
    result: GenerationResult | None = None
    stream = backend.generate(
        messages, GenerationOptions(**options), cancel=cancel, on_prefill=on_prefill
    )
    for ev in stream:
        if ev.result is not None:
            result = ev.result
        text += ev.delta
    assert result is not None
    return text, result


def test_tokenizer_counts_exactly_what_the_model_sees(real_backend: Any) -> None:
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hello there"}]
    prompt = real_backend.render_prompt(msgs)
    assert prompt.startswith("<|im_start|>system\n" + SYSTEM)
    assert prompt.endswith("<|im_start|>assistant\n")
    tokens = real_backend.tokenize(prompt)
    # Special tokens are single tokens, not spelled out.
    assert tokens.count(tokens[0]) == 3  # three <|im_start|>
    assert real_backend.count_prompt(msgs) == len(tokens)
    # Template overhead is counted: the prompt is more than the sum of its texts.
    assert len(tokens) > real_backend.count(SYSTEM) + real_backend.count("Hello there")
    assert real_backend.info.trained_context == 8192
    assert real_backend.info.chat_template_source == "gguf"


def test_streams_a_reply_and_reports_cache_reuse(real_backend: Any) -> None:
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "What is the capital of France?"},
    ]
    text, first = _run(real_backend, msgs, max_tokens=24, temperature=0.0)
    assert "Paris" in text
    assert first.text == text
    assert first.completion_tokens > 0
    assert first.prompt_tokens == real_backend.count_prompt(msgs)
    # The same prompt again: everything but the last token comes from the KV cache.
    _, second = _run(real_backend, msgs, max_tokens=4, temperature=0.0)
    assert second.prompt_reused == second.prompt_tokens - 1
    assert second.prompt_evaluated == 1


def test_an_encoded_prompt_is_evaluated_without_tokenizing_again(
    real_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The controller encodes a prompt once (``encode_prompt``); ``generate`` given it
    neither renders nor tokenizes the messages again, and evaluates exactly those tokens."""
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Say hi."}]
    encoded = real_backend.encode_prompt(msgs)
    assert encoded.text == real_backend.render_prompt(msgs)
    assert list(encoded.tokens) == real_backend.tokenize(encoded.text)
    assert encoded.count == real_backend.count_prompt(msgs)
    real_backend.reset_kv_cache()
    calls: list[str] = []
    for name in ("render_prompt", "tokenize_prompt", "tokenize"):
        original = getattr(real_backend, name)

        def spy(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            calls.append(_name)
            return _original(*args, **kw)

        monkeypatch.setattr(real_backend, name, spy)
    stream = real_backend.generate(
        msgs, GenerationOptions(max_tokens=2, temperature=0.0), prompt=encoded
    )
    results = [ev.result for ev in stream if ev.result is not None]
    assert len(results) == 1
    result = results[0]
    assert calls == []
    assert result.prompt_tokens == encoded.count
    assert real_backend.cached_prefix(list(encoded.tokens)) == encoded.count


def test_raw_prefill_times_pieces_without_touching_the_chat_cache(real_backend: Any) -> None:
    """``raw_prefill`` (the benchmark's raw llama.cpp rate, through a public method)."""
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Say hi."}]
    _run(real_backend, msgs, max_tokens=2, temperature=0.0)
    cached = real_backend.cached_tokens()
    tokens = (real_backend.tokenize(SYSTEM) * 8)[:64]
    pieces = real_backend.raw_prefill(tokens, piece=32)
    assert [n for n, _ in pieces] == [32, 32]
    assert all(seconds > 0 for _, seconds in pieces)
    assert real_backend.cached_tokens() == cached


def test_kv_state_saved_and_restored_is_reused(real_backend: Any) -> None:
    """The KVCacheAware protocol on the real model: a saved cache, restored after another
    prompt replaced it, makes the first prompt cost one token again, with the same reply."""
    assert isinstance(real_backend, KVCacheAware)
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Name three colours of the rainbow."},
    ]
    tokens = real_backend.tokenize_prompt(real_backend.render_prompt(msgs))
    real_backend.reset_kv_cache()
    assert real_backend.cached_prefix(tokens) == 0
    first_text, first = _run(real_backend, msgs, max_tokens=12, temperature=0.0)
    assert first.prompt_reused == 0
    assert real_backend.cached_prefix(tokens) == len(tokens)
    saved = real_backend.save_state()
    assert saved.tokens[: len(tokens)] == tuple(tokens) and saved.data
    other = [{"role": "user", "content": "Count from one to five."}]
    _run(real_backend, other, max_tokens=8, temperature=0.0)
    assert real_backend.cached_prefix(tokens) < len(tokens)
    real_backend.load_state(saved)
    assert real_backend.cached_prefix(tokens) == len(tokens)
    again_text, again = _run(real_backend, msgs, max_tokens=12, temperature=0.0)
    assert again.prompt_evaluated == 1
    assert again_text == first_text


def test_stop_takes_effect_within_one_token(real_backend: Any) -> None:
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Write a very long story about a dragon and a knight."},
    ]
    cancel = CancelToken()
    deltas = 0
    result: GenerationResult | None = None
    for ev in real_backend.generate(msgs, GenerationOptions(300), cancel=cancel):
        if ev.result is not None:
            result = ev.result
        elif ev.delta:
            deltas += 1
            if deltas == 3:
                cancel.cancel()
    assert result is not None
    assert result.finish_reason == "cancelled"
    assert result.completion_tokens <= 4


def test_cancel_interrupts_prompt_evaluation(real_backend: Any) -> None:
    long = "The quick brown fox jumps over the lazy dog. " * 300
    msgs = [{"role": "user", "content": long + " Summarize."}]
    cancel = CancelToken()
    seen: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        cancel.cancel()

    _, result = _run(real_backend, msgs, max_tokens=8, cancel=cancel, on_prefill=progress)
    assert result.finish_reason == "cancelled"
    assert result.completion_tokens == 0
    assert len(seen) == 1 and seen[0] < result.prompt_tokens


def test_over_long_prompt_raises_context_overflow(real_backend: Any) -> None:
    msgs = [{"role": "user", "content": "word " * 9000}]
    with pytest.raises(ContextOverflowError) as info:
        real_backend.generate(msgs, GenerationOptions(8))
    assert info.value.window == 8192
    assert info.value.prompt_tokens > 8192


def test_truncated_model_file_gives_typed_error(embedded_model_path: Path, tmp_path: Path) -> None:
    broken = tmp_path / "truncated.gguf"
    with embedded_model_path.open("rb") as src, broken.open("wb") as dst:
        dst.write(src.read(5_000_000))
    with pytest.raises(ModelLoadError) as info:
        LlamaBackend.load(str(broken), n_ctx=2048)
    assert "damaged" in str(info.value)
    # The registered copy, cut short in place of the real one, names the expected size.
    fake_dir = tmp_path / "models"
    fake_dir.mkdir()
    shutil.copy(broken, fake_dir / embedded_model_path.name)
    import os

    os.environ["ASSISTANT_MODEL_DIR"] = str(fake_dir)
    with pytest.raises(ModelLoadError) as info2:
        LlamaBackend.load("smollm2-135m-instruct", n_ctx=2048)
    assert "truncated" in str(info2.value) and "98,362,432" in str(info2.value)


def test_missing_and_non_gguf_files_give_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        LlamaBackend.load(str(tmp_path / "nope.gguf"))
    text = tmp_path / "notes.gguf"
    text.write_text("hello, I am not a model")
    with pytest.raises(ModelLoadError, match="not a GGUF"):
        LlamaBackend.load(str(text))


@pytest.mark.parametrize("amx", [True, False])
def test_a_build_with_amx_kernels_loads_weights_outside_them(
    embedded_model_path: Path, monkeypatch: pytest.MonkeyPatch, amx: bool
) -> None:
    """llama.cpp's AMX kernels crash some CPUs at the first real prompt: with a build that
    has them, the weights stay out of the extra buffer types (so out of AMX), the model
    answers a prompt long enough to have reached them, and the library's defaults are put
    back afterwards. Without them, nothing changes."""
    import llama_cpp.llama_cpp as native

    from assistant.llm import llama_backend

    monkeypatch.setattr(llama_backend, "has_amx_kernels", lambda: amx)
    original = native.llama_model_default_params
    backend = LlamaBackend.load(str(embedded_model_path), n_ctx=1024)
    try:
        assert backend._llm.model_params.use_extra_bufts is (not amx)
        assert native.llama_model_default_params is original
        long_question = "Here is a list of fruits: " + ", ".join(["apple", "pear"] * 40) + "."
        msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": long_question}]
        text, result = _run(backend, msgs, max_tokens=8, temperature=0.0)
        assert result.prompt_evaluated > 64 and text
    finally:
        backend.close()
