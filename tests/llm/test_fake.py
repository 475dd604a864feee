"""The scripted backend behaves like the real one where the engine depends on it."""

from __future__ import annotations

import pytest

from assistant.llm.base import CancelToken, ContextOverflowError, LLMBackend
from assistant.llm.fake import ScriptedBackend


def _reply(b: ScriptedBackend, msgs: list[dict[str, str]], **kw: object) -> str:
    return "".join(ev.delta for ev in b.generate(msgs, max_tokens=100, **kw))  # type: ignore[arg-type]


def test_satisfies_the_protocol_and_counts_exactly() -> None:
    b = ScriptedBackend(["one two three"])
    assert isinstance(b, LLMBackend)
    msgs = [{"role": "user", "content": "hi"}]
    assert b.count_prompt(msgs) == len(b.tokenize(b.render_prompt(msgs)))
    assert _reply(b, msgs) == "one two three"
    assert b.calls[0].prompt_tokens == b.count_prompt(msgs)


def test_simulates_kv_cache_reuse() -> None:
    b = ScriptedBackend(["a", "b"])
    msgs = [{"role": "user", "content": "hello there"}]
    _reply(b, msgs)
    longer = [*msgs, {"role": "assistant", "content": "a"}, {"role": "user", "content": "more"}]
    _reply(b, longer)
    first, second = (c.result for c in b.calls)
    assert first is not None and second is not None
    assert first.prompt_reused == 0
    assert second.prompt_reused >= first.prompt_tokens - 1
    assert second.prompt_evaluated == second.prompt_tokens - second.prompt_reused


def test_overflow_and_cancel() -> None:
    b = ScriptedBackend(window=50)
    with pytest.raises(ContextOverflowError):
        _reply(b, [{"role": "user", "content": "word " * 100}])
    b2 = ScriptedBackend(["x " * 50])
    cancel = CancelToken()
    cancel.cancel()
    events = list(b2.generate([{"role": "user", "content": "go"}], max_tokens=10, cancel=cancel))
    assert events[-1].result is not None and events[-1].result.finish_reason == "cancelled"


def test_records_a_grammar_and_holds_replies_to_it() -> None:
    from assistant.llm.base import GrammarError

    grammar = 'root ::= "- " [a-z ]{1,20}'
    b = ScriptedBackend(["- fine words", "[User]: no"])
    msgs = [{"role": "user", "content": "go"}]
    assert _reply(b, msgs, grammar=grammar) == "- fine words"
    assert b.calls[0].grammar == grammar
    with pytest.raises(ValueError, match="outside the grammar"):
        _reply(b, msgs, grammar=grammar)
    # A model that cannot follow grammars: the error comes before any reply.
    failing = ScriptedBackend(["- fine"], grammar_failure="no byte tokens")
    with pytest.raises(GrammarError, match="no byte tokens"):
        _reply(failing, msgs, grammar=grammar)
    assert _reply(failing, msgs) == "- fine"  # without a grammar it answers
