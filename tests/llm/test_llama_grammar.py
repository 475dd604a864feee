"""Generation under a GBNF grammar with the real embedded model."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.llm.base import GenerationOptions, GenerationResult, GrammarError
from tests.fakes.gbnf import accepts
from tests.llm.helpers import grammar_accepts

pytestmark = pytest.mark.integration

ANY_TEXT = "root ::= [^\\x00]*\n"
LIST = 'root ::= item ("\\n" item){0,2}\nitem ::= "- " [A-Za-z] [a-zA-Z ,]{0,40}\n'


def _run(backend: Any, messages: list[dict[str, str]], **kw: Any) -> tuple[str, GenerationResult]:
    text = ""
    result: GenerationResult | None = None
    for ev in backend.generate(messages, GenerationOptions(**kw)):
        if ev.result is not None:
            result = ev.result
        text += ev.delta
    assert result is not None
    return text, result


def _ask(question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}]


def test_the_reply_is_in_the_grammars_language(real_backend: Any) -> None:
    msgs = _ask("Name three fruits.")
    free, _ = _run(real_backend, msgs, max_tokens=40, temperature=0.0)
    text, result = _run(real_backend, msgs, max_tokens=80, temperature=0.0, grammar=LIST)
    assert accepts(LIST, text), text
    assert result.finish_reason == "stop"  # the grammar ended, so the model stopped
    assert result.ignored == ()
    assert not accepts(LIST, free)  # unconstrained, it writes something else
    answer, _ = _run(
        real_backend, _ask("Is Paris in France? Answer yes or no."), max_tokens=8,
        temperature=0.0, grammar='root ::= "yes" | "no"',
    )
    assert answer in {"yes", "no"}


def test_a_grammar_that_allows_everything_changes_nothing(real_backend: Any) -> None:
    """The fast sampler picks what llama.cpp's own sampler picks (same penalty, greedy)."""
    msgs = _ask("Write two sentences about the sea.")
    free, _ = _run(real_backend, msgs, max_tokens=40, temperature=0.0)
    constrained, _ = _run(real_backend, msgs, max_tokens=40, temperature=0.0, grammar=ANY_TEXT)
    assert constrained == free


def test_a_broken_grammar_fails_before_anything_is_evaluated(real_backend: Any) -> None:
    with pytest.raises(GrammarError):
        real_backend.generate(
            _ask("hi"), GenerationOptions(max_tokens=4, grammar="root ::= undefined_rule\n")
        )
    text, _ = _run(real_backend, _ask("Say hello."), max_tokens=8, temperature=0.0)
    assert text  # the backend still works


def test_grammar_accepts_walks_the_real_vocabulary(real_backend: Any) -> None:
    assert grammar_accepts(real_backend, LIST, "- apples\n- pears, plums")
    assert not grammar_accepts(real_backend, LIST, "- apples\n- pears\n- plums\n- figs")
    assert not grammar_accepts(real_backend, LIST, "apples")
    assert not grammar_accepts(real_backend, LIST, "- apples\n")
