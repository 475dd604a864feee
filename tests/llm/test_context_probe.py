"""The effective-context probe: planted facts at depths and sizes, the rule, the store."""

from __future__ import annotations

import re
from typing import Any

import pytest

from assistant.llm.context_probe import (
    EffectiveContext,
    EffectiveContextStore,
    Trial,
    choose_effective,
    measured_context,
    probe_effective_context,
    store_key,
)
from tests.fakes.scripted import ScriptedBackend


def _reader(limit: int, backend: ScriptedBackend) -> Any:
    """A stand-in model that finds the fact only in prompts up to ``limit`` tokens."""

    def reply(messages: list[dict[str, Any]]) -> str:
        text = messages[-1]["content"]
        door = re.search(r"for the (\w+) door\?", text)
        assert door is not None
        code = re.search(rf"The access code for the {door.group(1)} door is (\d+)\.", text)
        assert code is not None
        if backend.count_prompt(messages) <= limit:
            return f"The access code is {code.group(1)}."
        return "I do not know."

    return reply


def test_the_effective_context_is_where_answers_stop() -> None:
    backend = ScriptedBackend(window=8_192)
    backend.default_reply = ""
    for _ in range(40):
        backend.enqueue(_reader(3_000, backend))
    result = probe_effective_context(backend, (1024, 2048, 4096, 8192, 16384), trials=2)
    assert result.accuracy == {1024: [6, 6], 2048: [6, 6], 4096: [0, 6], 8192: [0, 6]}
    assert result.effective == 2048
    assert result.describe() == (
        "about 2,048 tokens (accuracy 6/6 at 1,024, 6/6 at 2,048, 0/6 at 4,096, 0/6 at 8,192)"
    )
    asked = backend.calls
    assert len(asked) == 24  # 16,384 is beyond the window: skipped
    for call in asked:
        assert call.options is not None and call.options.temperature == 0.0
        assert call.options.max_tokens <= 24
        assert call.prompt_tokens <= 8_192 - 20
    sizes = [c.prompt_tokens for c in asked]
    assert 900 < sizes[0] <= 1024 and 3_900 < sizes[12] <= 4096
    prompt = asked[0].messages[-1]["content"]
    codes = {re.findall(r"door is (\d{4})\.", c.messages[-1]["content"])[0] for c in asked}
    assert len(codes) > 12  # a new fact per trial
    sentences = [s for s in prompt.split(". ") if s]
    assert len(set(sentences)) > len(sentences) * 0.8  # varied filler, not one line repeated
    # The fact sits at the depth asked for: 0.9 first, then 0.5, then 0.1.
    for call, depth in zip(asked[:6], (0.9, 0.9, 0.5, 0.5, 0.1, 0.1), strict=True):
        text = call.messages[-1]["content"]
        at = text.index("The access code for the") / len(text)
        assert abs(at - depth) < 0.08


def test_the_rule_needs_one_right_answer_and_keeps_four_fifths() -> None:
    assert choose_effective({1024: [6, 6], 2048: [5, 6], 4096: [4, 6]}) == 2048
    assert choose_effective({1024: [0, 6], 2048: [0, 6]}) == 0
    assert choose_effective({1024: [1, 6], 2048: [1, 6], 4096: [0, 6]}) == 2048
    assert choose_effective({1024: [6, 6], 2048: [2, 6], 4096: [6, 6]}) == 4096


def test_results_are_kept_per_model_and_window_and_read_back() -> None:
    backend = ScriptedBackend(window=8_192)
    store = EffectiveContextStore()
    assert measured_context(backend.info, store) is None
    result = EffectiveContext(
        "scripted", 8_192, 4_096, {1024: [6, 6], 4096: [5, 6], 8192: [1, 6]},
        "2026-11-26T07:00:00+00:00",
    )
    store.put(store_key(backend.info), result)
    assert measured_context(backend.info, store) == 4_096
    again = EffectiveContextStore().get(store_key(backend.info))
    assert again == result
    # A limit found with another window holds in this one too; a probe that found none,
    # or that found nothing right, does not cap anything.
    wider = ScriptedBackend(window=10_000)
    assert measured_context(wider.info, store) == 4_096
    store.put(store_key(backend.info), EffectiveContext(
        "scripted", 8_192, 8_192, {1024: [6, 6], 8192: [6, 6]}, "2026-11-26T07:01:00+00:00"
    ))
    assert measured_context(backend.info, store) is None
    store.path.write_text("{not json", encoding="utf-8")
    assert measured_context(backend.info, store) is None  # damaged: not measured


@pytest.mark.integration
def test_probe_on_the_embedded_model(real_backend: Any) -> None:
    """Bounded: two small sizes, one question per depth (6 short replies)."""
    real_backend.reset_kv_cache()
    result = probe_effective_context(real_backend, (512, 1024), trials=1)
    assert sorted(result.accuracy) == [512, 1024]
    assert all(asked == 3 for _right, asked in result.accuracy.values())
    assert len(result.trials) == 6
    for trial in result.trials:
        assert 0.8 * trial["size"] < trial["prompt_tokens"] <= trial["size"]
        assert trial["reply"].strip()  # the model answered something
    right = sum(r for r, _n in result.accuracy.values())
    assert result.effective in (0, 512, 1024)
    assert (result.effective > 0) == (result.accuracy[512][0] > 0)
    assert right >= 1  # SmolLM2 finds a planted number in a short prompt


def test_a_model_that_answers_nothing_is_described_as_such() -> None:
    result = EffectiveContext("m", 8_192, 0, {1024: [0, 3]}, "2026-11-26T07:00:00+00:00")
    assert result.describe() == "no size answered (accuracy 0/3 at 1,024)"


class _TailHeldBack(ScriptedBackend):
    """Streams every piece of the reply but the last; the final result has all of it (as a
    backend holding back a tail that could start a stop string does)."""

    def generate(self, messages: Any, options: Any, **kwargs: Any) -> Any:
        events = list(super().generate(messages, options, **kwargs))
        deltas = [e for e in events if e.result is None]
        yield from deltas[:-1]
        yield events[-1]


def test_a_reply_is_scored_whole_not_from_its_streamed_pieces() -> None:
    backend = _TailHeldBack(window=4_096)
    backend.default_reply = ""
    for _ in range(3):
        backend.enqueue(_reader(4_096, backend))
    result = probe_effective_context(backend, (1024,), trials=1)
    assert result.accuracy == {1024: [3, 3]}
    assert all(t["reply"].endswith(f"{t['code']}.") for t in result.trials)


def _registered_info(window: int) -> Any:
    """The registry's default model as a loaded backend describes it."""
    from dataclasses import replace

    from assistant.llm.registry import load_registry

    registry = load_registry()
    entry = registry.get(registry.small)
    assert entry is not None
    info = replace(ScriptedBackend(window=window).info, path=f"/models/{entry.file}",
                   size_bytes=entry.size, trained_context=entry.context_length)
    return info, entry


def test_the_registry_size_caps_prompts_until_a_probe_finds_a_smaller_one() -> None:
    info, entry = _registered_info(8_192)
    assert entry.effective_context is not None  # measured with the answer benchmark
    store = EffectiveContextStore()
    assert measured_context(info, store) == entry.effective_context  # nothing probed here
    # A probe that found the model using every size does not lift the registry's limit...
    store.put(store_key(info), EffectiveContext(
        "m", 8_192, 8_192, {1024: [6, 6], 8192: [6, 6]}, "2026-11-26T07:00:00+00:00"))
    assert measured_context(info, store) == entry.effective_context
    # ...one that found a smaller size wins.
    store.put(store_key(info), EffectiveContext(
        "m", 8_192, 1_024, {1024: [6, 6], 8192: [0, 6]}, "2026-11-26T07:00:00+00:00"))
    assert measured_context(info, store) == 1_024
    # A window no larger than the size: nothing to cap.
    small, _ = _registered_info(entry.effective_context)
    assert measured_context(small, EffectiveContextStore(store.path.with_name("x.json"))) is None


def test_a_code_counts_only_as_a_number_of_its_own() -> None:
    def trial(reply: str) -> Trial:
        return Trial(size=1024, depth=0.5, door="orange", code="5242", prompt_tokens=1000,
                     reply=reply)

    assert trial("5242.").correct and trial("The orange door is 5242").correct
    assert not trial("15242.").correct and not trial("52421").correct  # gemma wrote the first

