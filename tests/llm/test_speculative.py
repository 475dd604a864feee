"""Prompt-lookup speculative decoding: the drafter alone, then the embedded engine with it
on (the real SmolLM2, bounded replies). The text is not asserted equal to plain decoding's:
batched verification changes llama.cpp's arithmetic and SmolLM2 then takes the other side of
near ties (docs/PERFORMANCE.md, "Prompt-lookup decoding")."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from assistant.llm.base import CancelToken, EngineTuning, GenerationOptions, GenerationResult
from assistant.llm.llama_speculative import DRAFT_TOKENS, PromptLookup


def _ctx(*tokens: int) -> np.ndarray:
    return np.array(tokens, dtype=np.intc)


def test_the_draft_follows_the_latest_earlier_occurrence() -> None:
    lookup = PromptLookup(max_tokens=3)
    # "5 6" occurs twice before the end; the later one (followed by 9 9 9) is drafted.
    assert lookup(_ctx(5, 6, 1, 1, 5, 6, 9, 9, 9, 4, 5, 6)).tolist() == [9, 9, 9]
    # A longer match wins over a later shorter one: "4 5 6" is followed by 7.
    assert lookup(_ctx(4, 5, 6, 7, 2, 5, 6, 8, 4, 5, 6)).tolist() == [7, 2, 5]


def test_single_token_matches_and_no_match_draft_nothing() -> None:
    lookup = PromptLookup()
    assert lookup(_ctx(1, 2, 3, 4, 3)).tolist() == []
    assert lookup(_ctx(1, 2, 3, 4, 5)).tolist() == []
    assert lookup(_ctx(7)).tolist() == []


def test_the_draft_length_adapts_to_what_was_accepted() -> None:
    lookup = PromptLookup(max_tokens=10)
    context = _ctx(*range(40), 0, 1)
    assert len(lookup(context)) == 10
    lookup.feedback(10, 2)  # a miss after 2: next drafts are short
    assert len(lookup(context)) == 3
    lookup.feedback(3, 3)  # a full hit: longer again, up to the maximum
    lookup.feedback(5, 5)
    assert len(lookup(context)) == 7
    for _ in range(5):
        lookup.feedback(10, 10)
    assert len(lookup(context)) == 10


QUOTE = (
    "def restock(self, sku: str, qty: int) -> int:\n"
    '    """Add qty units of sku and return the new level."""\n'
    "    if qty <= 0:\n"
    '        raise ValueError("qty must be positive")\n'
    "    item = self.items[sku]\n"
    "    item.qty += qty\n"
    "    return item.qty\n"
)
CHAT = [
    {"role": "system", "content": "You repeat text exactly."},
    {"role": "user", "content": f"Here is a function:\n\n{QUOTE}\nRepeat it exactly."},
]


def _reply(backend: Any, messages: list[dict[str, str]], max_tokens: int = 64,
           cancel: CancelToken | None = None) -> tuple[GenerationResult, list[str]]:
    deltas: list[str] = []
    result = None
    for event in backend.generate(messages, GenerationOptions(max_tokens=max_tokens,
                                                              temperature=0.0), cancel=cancel):
        if event.delta:
            deltas.append(event.delta)
            if cancel is not None and len(deltas) == 3:
                cancel.cancel()
        result = event.result or result
    assert result is not None
    return result, deltas


@pytest.mark.integration
def test_a_quoting_reply_takes_drafts_and_leaves_the_cache_right(real_backend: Any) -> None:
    backend = real_backend
    backend.reset_kv_cache()
    backend.tune(EngineTuning(prompt_lookup=True))
    try:
        assert backend.prompt_lookup == DRAFT_TOKENS
        assert "prompt lookup on" in backend.describe_tuning()
        result, deltas = _reply(backend, CHAT)
        assert result.text and "".join(deltas) == result.text
        stats = backend.draft_stats
        assert stats is not None and stats.accepted > 0, stats
        # The cache holds the prompt, then the reply (drafts past a miss were cut away):
        # the next turn reuses all of it.
        prompt = backend.tokenize_prompt(backend.render_prompt(CHAT))
        assert backend.cached_tokens()[: len(prompt)] == prompt
        follow = [*CHAT, {"role": "assistant", "content": result.text},
                  {"role": "user", "content": "Thanks."}]
        second, _ = _reply(backend, follow, max_tokens=4)
        assert second.prompt_reused >= len(prompt)
        # Stop still takes effect within a step.
        cancelled, deltas = _reply(backend, CHAT, max_tokens=200, cancel=CancelToken())
        assert cancelled.finish_reason == "cancelled"
        assert cancelled.completion_tokens <= 3 + DRAFT_TOKENS + 1
    finally:
        backend.tune(EngineTuning(prompt_lookup=False))
    assert backend.prompt_lookup == 0
