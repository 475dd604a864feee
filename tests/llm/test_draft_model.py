"""Draft-model speculative decoding: the chain of drafters alone, then the real pair
(Qwen2.5-Coder 0.5B drafting for the 1.5B, same vocabulary): the reply is plain decoding's
token for token, in fewer model calls; a model of another vocabulary is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant.llm.base import EngineTuning, GenerationOptions, GenerationResult
from assistant.llm.llama_draft import WINDOW_MAX, WINDOW_MIN, DraftModel
from assistant.llm.llama_speculative import FirstDraft
from assistant.llm.registry import load_registry, model_path

#: The pair, by registry name (``make test`` provisions every registered model).
MAIN, DRAFT = "qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"


def _model(name: str) -> Path:
    entry = load_registry().get(name)
    assert entry is not None, f"{name} is not registered"
    path = model_path(entry)
    if not path.exists():
        pytest.fail(f"{name} is not provisioned at {path}: run make models")
    return path


class _Fixed:
    """A drafter that proposes a fixed draft and records its feedback."""

    def __init__(self, draft: list[int]) -> None:
        self.draft = np.array(draft, dtype=np.intc)
        self.feedbacks: list[tuple[int, int]] = []

    def __call__(self, context: np.ndarray) -> np.ndarray:
        return self.draft

    def feedback(self, drafted: int, accepted: int) -> None:
        self.feedbacks.append((drafted, accepted))


def test_the_first_drafter_with_a_proposal_drafts_and_hears_how_it_did() -> None:
    lookup, model = _Fixed([]), _Fixed([7, 8])
    chain = FirstDraft(lookup, model)
    context = np.array([1, 2, 3], dtype=np.intc)
    assert chain(context).tolist() == [7, 8]  # lookup found nothing: the model drafts
    chain.feedback(2, 1)
    assert model.feedbacks == [(2, 1)] and lookup.feedbacks == []
    lookup.draft = np.array([4], dtype=np.intc)
    assert chain(context).tolist() == [4]  # lookup first when it has one (free)
    chain.feedback(1, 1)
    assert lookup.feedbacks == [(1, 1)] and model.feedbacks == [(2, 1)]
    empty = FirstDraft(_Fixed([]))
    assert empty(context).tolist() == []
    empty.feedback(0, 0)  # nothing drafted: nothing to learn, no error


@pytest.fixture(scope="module")
def pair() -> Iterator[Any]:
    """The 1.5B loaded as the pairing loads it (flat weights), the 0.5B drafting."""
    from assistant.llm.llama_backend import LlamaBackend

    main, draft = _model(MAIN), _model(DRAFT)
    backend = LlamaBackend.load(str(main), n_ctx=1024, flat_weights=True)
    backend.use_draft_model(str(draft))
    yield backend
    backend.close()


CODE = (
    "def total_per_customer(rows):\n"
    "    totals = {}\n"
    "    for row in rows:\n"
    "        totals[row['customer']] = totals.get(row['customer'], 0) + row['amount']\n"
    "    return totals\n"
)
CHAT = [
    {"role": "system", "content": "You are a coding assistant."},
    {"role": "user", "content": f"Add a docstring to this function:\n\n{CODE}"},
]


def _reply(backend: Any, max_tokens: int) -> tuple[GenerationResult, list[int]]:
    prompt = backend.tokenize_prompt(backend.render_prompt(CHAT))
    result = None
    for event in backend.generate_tokens(prompt, GenerationOptions(max_tokens, temperature=0.0)):
        result = event.result or result
    assert result is not None
    reply = backend.cached_tokens()[len(prompt) : len(prompt) + result.completion_tokens]
    return result, reply


@pytest.mark.integration
def test_the_drafted_reply_is_plain_decodings_token_for_token(pair: Any) -> None:
    drafter = pair.draft
    assert drafter is not None, pair.draft_problem
    assert f"draft model {drafter.name}" in pair.describe_tuning()
    drafted, drafted_tokens = _reply(pair, 32)
    stats = pair.draft_stats
    assert stats is not None and stats.accepted > 0, stats
    # Fewer calls of the 1.5B than tokens: several tokens were kept per call.
    assert stats.steps < drafted.completion_tokens, stats
    pair.draft = None
    try:
        plain, plain_tokens = _reply(pair, 32)
    finally:
        pair.draft = drafter
    assert plain.completion_tokens == drafted.completion_tokens == 32
    assert drafted.text == plain.text
    # Token for token (plain decoding leaves its last token out of the cache).
    assert len(plain_tokens) >= 31 and drafted_tokens[: len(plain_tokens)] == plain_tokens


@pytest.mark.integration
def test_the_draft_model_reads_only_the_contexts_tail(pair: Any) -> None:
    drafter: DraftModel = pair.draft
    counting = pair.tokenize(", ".join(str(i) for i in range(1, 400)) + ", ")
    assert len(counting) > WINDOW_MAX
    draft = drafter(np.array(counting, dtype=np.intc))
    assert pair._llm.detokenize(draft.tolist()).startswith(b"4")  # 400, ...
    assert drafter._anchor == len(counting) - WINDOW_MIN
    held = len(drafter._held)
    more = counting + draft.tolist()[:1]
    drafter(np.array(more, dtype=np.intc))
    assert drafter._anchor == len(counting) - WINDOW_MIN  # kept: only the new token read
    assert len(drafter._held) >= held


@pytest.mark.integration
def test_a_model_of_another_vocabulary_is_not_used_as_a_draft(real_backend: Any) -> None:
    draft = _model(DRAFT)
    real_backend.tune(EngineTuning(draft_model=str(draft)))
    try:
        assert real_backend.draft is None
        assert "vocabulary" in real_backend.draft_problem
        assert "draft model not used" in real_backend.describe_tuning()
    finally:
        real_backend.tune(EngineTuning())
    assert real_backend.draft is None and real_backend.draft_problem == ""
