"""The real model reports prompt evaluation as llama.cpp does it: once at the start (what
the KV cache already holds), then after every batch."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from assistant.llm.base import GenerationOptions

pytestmark = pytest.mark.integration


def _prefill(backend: Any, messages: list[dict[str, str]]) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []
    for event in backend.generate(
        messages,
        GenerationOptions(max_tokens=1, temperature=0.0),
        on_prefill=lambda done, total: calls.append((done, total)),
    ):
        if event.result is not None:
            assert event.result.prompt_evaluated + event.result.prompt_reused == (
                event.result.prompt_tokens
            )
    return calls


def test_progress_starts_at_the_cached_prefix_and_grows_per_batch(real_backend: Any) -> None:
    text = " ".join(f"Line {i}: the service answered in {i % 50} ms." for i in range(90))
    messages = [{"role": "user", "content": text}]
    total = real_backend.count_prompt(messages)
    assert total > 1024  # three batches of 512
    real_backend.reset_kv_cache()
    calls = _prefill(real_backend, messages)
    assert calls[0] == (0, total)
    dones = [done for done, _ in calls]
    assert dones == sorted(dones) and len(dones) >= 4
    assert all(t == total for _, t in calls)
    assert all(b - a <= 512 for a, b in itertools.pairwise(dones))
    assert dones[-1] == total - 1  # the last token is evaluated with the reply's first

    follow_up = [*messages, {"role": "assistant", "content": "OK."},
                 {"role": "user", "content": "How many lines were there?"}]
    again = _prefill(real_backend, follow_up)
    assert again[0][0] > total // 2  # the cache held the first prompt
