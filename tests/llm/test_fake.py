"""The scripted backend behaves like the real one where the engine depends on it."""

from __future__ import annotations

import pytest

from assistant.llm.base import (
    CancelToken,
    ContextOverflowError,
    GenerationOptions,
    KVCacheAware,
    LLMBackend,
)
from tests.fakes.scripted import ScriptedBackend


def _reply(b: ScriptedBackend, msgs: list[dict[str, str]]) -> str:
    return "".join(ev.delta for ev in b.generate(msgs, GenerationOptions(max_tokens=100)))


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
    events = list(
        b2.generate([{"role": "user", "content": "go"}], GenerationOptions(10), cancel=cancel)
    )
    assert events[-1].result is not None and events[-1].result.finish_reason == "cancelled"


def test_kv_cache_state_round_trips_and_resets() -> None:
    b = ScriptedBackend(["a", "b", "c"])
    assert isinstance(b, KVCacheAware)
    msgs = [{"role": "user", "content": "hello there, a longer prompt"}]
    _reply(b, msgs)
    tokens = b.tokenize_prompt(b.render_prompt(msgs))
    assert tokens == b.tokenize(b.render_prompt(msgs))
    assert b.cached_prefix(tokens) == len(tokens)
    saved = b.save_state()
    b.reset_kv_cache()
    assert b.cached_prefix(tokens) == 0
    _reply(b, msgs)
    assert b.calls[-1].result is not None and b.calls[-1].result.prompt_reused == 0
    b.load_state(saved)
    assert b.cached_prefix(tokens) == len(tokens)
    _reply(b, msgs)
    assert b.calls[-1].result is not None
    assert b.calls[-1].result.prompt_reused == len(tokens) - 1


def test_a_grammar_it_cannot_apply_is_reported_not_silently_dropped() -> None:
    b = ScriptedBackend(["free text"], ignore_grammar=True)
    events = list(b.generate([{"role": "user", "content": "x"}], GenerationOptions(
        max_tokens=10, grammar='root ::= "yes" | "no"')))
    result = events[-1].result
    assert result is not None and result.ignored == ("grammar",)
    assert b.calls[-1].options is not None and b.calls[-1].options.grammar is not None


def test_options_are_one_hashable_value() -> None:
    opts = GenerationOptions(max_tokens=8, stop=["a", "b"])  # type: ignore[arg-type]
    assert opts.stop == ("a", "b")
    assert hash(opts) == hash(GenerationOptions(max_tokens=8, stop=("a", "b")))
    with pytest.raises(ValueError):
        GenerationOptions(max_tokens=-1)


def test_records_a_grammar_and_holds_replies_to_it() -> None:
    from assistant.llm.base import GrammarError

    opts = GenerationOptions(max_tokens=50, grammar='root ::= "- " [a-z ]{1,20}')

    def under(b: ScriptedBackend) -> str:
        return "".join(ev.delta for ev in b.generate([{"role": "user", "content": "go"}], opts))

    b = ScriptedBackend(["- fine words", "[User]: no"])
    assert under(b) == "- fine words"
    assert b.calls[0].grammar == opts.grammar
    assert b.calls[0].result is not None and b.calls[0].result.ignored == ()
    with pytest.raises(ValueError, match="outside the grammar"):
        under(b)
    # A model that cannot follow grammars: the error comes before any reply.
    failing = ScriptedBackend(["- fine"], grammar_failure="no byte tokens")
    with pytest.raises(GrammarError, match="no byte tokens"):
        under(failing)
    assert _reply(failing, [{"role": "user", "content": "go"}]) == "- fine"
