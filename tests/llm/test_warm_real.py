"""The read-ahead on the real embedded model: a prompt warmed into the cache while the user
types is what the send then finds there (:class:`~assistant.llm.base.PromptWarmer`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from assistant.llm.base import (
    CancelToken,
    ContextOverflowError,
    GenerationOptions,
    GenerationResult,
    PromptWarmer,
)
from assistant.llm.llama_backend import LlamaBackend

pytestmark = pytest.mark.integration

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}
HISTORY = [
    SYSTEM,
    {"role": "user", "content": "My sister Ana lives in Porto and keeps three cats."},
    {"role": "assistant", "content": "That sounds lovely. Porto is a beautiful city."},
]
SENT = "How many cats does my sister keep, and in which city does she live?"


def _reply(backend: LlamaBackend, messages: list[dict[str, Any]]) -> GenerationResult:
    result: GenerationResult | None = None
    for event in backend.generate(messages, GenerationOptions(24, temperature=0.0)):
        result = event.result or result
    assert result is not None
    return result


@pytest.fixture
def backend(real_backend: Any) -> Iterator[LlamaBackend]:
    real_backend.reset_kv_cache()
    yield real_backend
    real_backend.reset_kv_cache()


def test_a_warmed_draft_leaves_only_its_last_word_and_the_template_to_evaluate(
    backend: LlamaBackend,
) -> None:
    assert isinstance(backend, PromptWarmer)
    sent = [*HISTORY, {"role": "user", "content": SENT}]
    draft = [*HISTORY, {"role": "user", "content": SENT.rsplit(" ", 1)[0]}]
    cold = _reply(backend, sent)
    assert cold.prompt_reused == 0

    backend.reset_kv_cache()
    _reply(backend, HISTORY[:2])  # the chat as it stood: its first exchange cached
    draft_tokens = backend.tokenize_prompt(backend.render_prompt(draft))
    warmed = backend.warm(draft)
    assert warmed.finished and warmed.prompt_tokens == len(draft_tokens)
    assert warmed.evaluated + warmed.reused == len(draft_tokens) - 1
    assert backend.cached_prefix(draft_tokens) == len(draft_tokens) - 1
    hot = _reply(backend, sent)
    sent_tokens = backend.tokenize_prompt(backend.render_prompt(sent))
    shared = next(i for i, (a, b) in enumerate(zip(draft_tokens, sent_tokens, strict=False))
                  if a != b)
    assert hot.prompt_reused == shared
    assert hot.prompt_evaluated == len(sent_tokens) - shared < 12
    assert hot.prompt_tokens == cold.prompt_tokens
    # The same greedy reply as evaluating the whole prompt at once.
    assert hot.text == cold.text


def test_a_cancelled_warm_evaluates_nothing_and_an_oversized_one_is_refused(
    backend: LlamaBackend,
) -> None:
    cancel = CancelToken()
    cancel.cancel()
    got = backend.warm(HISTORY, cancel=cancel)
    assert not got.finished and got.evaluated == 0
    assert backend.cached_prefix(backend.tokenize_prompt(backend.render_prompt(HISTORY))) == 0
    huge = [SYSTEM, {"role": "user", "content": "word " * 9000}]
    with pytest.raises(ContextOverflowError):
        backend.warm(huge)
