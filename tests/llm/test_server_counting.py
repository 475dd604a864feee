"""The decisions of the server engine's counting: when counts are exact (checked against
the server's own prompt sizes), and how much the memo keeps. The counting against a real
server is in test_openai_backend.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from assistant.llm.base import LLMError
from assistant.llm.fallback_tokenizer import Cl100kTokenizer
from assistant.llm.incremental_tokenizer import LRUMemo
from assistant.llm.server_counting import PROBES, LocalRendered, ServerRendered, verify_counting
from assistant.llm.server_probe import ServerProfile
from assistant.llm.template import ChatTemplate


def _counting() -> LocalRendered:
    return LocalRendered(ChatTemplate(None), Cl100kTokenizer(), description="cl100k", exact=True)


def _wire(messages: Sequence[dict[str, Any]], tools: Any) -> tuple[list[dict[str, Any]], Any]:
    return ChatTemplate(None).adapt(messages, tools), None


def test_counts_equal_to_the_servers_are_exact() -> None:
    counting = _counting()
    detail = verify_counting(counting, lambda m, t: counting._count_rendered(m, t), _wire)
    assert (counting.exact, counting.offset) == (True, 0)
    assert detail == "checked against the server's prompt sizes"


def test_a_constant_difference_is_corrected() -> None:
    counting = _counting()
    detail = verify_counting(counting, lambda m, t: counting._count_rendered(m, t) + 1, _wire)
    assert (counting.exact, counting.offset) == (True, 1)
    assert "+1 token per prompt" in detail
    probe = _wire(list(PROBES[0][0]), None)[0]
    assert counting.count(probe, None) == counting._count_rendered(probe, None) + 1


def test_differences_that_vary_make_estimates() -> None:
    counting = _counting()
    sizes = iter([10, 50, 90])
    detail = verify_counting(counting, lambda m, t: next(sizes), _wire)
    assert not counting.exact and counting.offset == 0
    assert "estimates" in detail


def test_a_server_that_does_not_report_sizes_leaves_the_claim() -> None:
    counting = _counting()
    detail = verify_counting(counting, lambda m, t: None, _wire)
    assert counting.exact and counting.offset == 0 and "could not be checked" in detail


def test_the_memo_is_bounded_by_entries_and_weight() -> None:
    memo = LRUMemo[str, list[int]](entries=3, weight=10)
    for i in range(5):
        memo.put(f"text {i}", [i] * 2)
    assert memo.get("text 0") is None and memo.get("text 1") is None
    assert memo.get("text 4") == [4, 4]
    memo.put("big", list(range(9)))  # 9 + 2 + 2 > 10: the oldest go
    assert memo.get("big") == list(range(9))
    assert memo.get("text 2") is None and memo.get("text 3") is None
    memo.put("too big", list(range(11)))  # never kept
    assert memo.get("too big") is None


class _Answers:
    """A server's JSON answers by path (what ``ServerRendered`` reads through ``post``)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.answers[path]


def test_a_vllm_render_without_a_prompt_is_an_error_not_an_empty_prompt() -> None:
    profile = ServerProfile(base_url="http://127.0.0.1:8000", kind="vllm", models=("m",),
                            model="m", tokenizer="vllm")
    messages = [{"role": "user", "content": "hi"}]
    good = _Answers({"/tokenize": {"tokens": [1, 2, 3]}, "/detokenize": {"prompt": "<s>hi"}})
    assert ServerRendered(good, profile).render(messages, None) == "<s>hi"  # type: ignore[arg-type]
    bad = _Answers({"/tokenize": {"tokens": [1, 2, 3]}, "/detokenize": ["not", "an object"]})
    with pytest.raises(LLMError, match="/detokenize gave no prompt"):
        ServerRendered(bad, profile).render(messages, None)  # type: ignore[arg-type]
