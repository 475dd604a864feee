"""Incremental prompt tokenization: memoized pieces must give exactly the full tokenization."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.llm.base import GenerationOptions
from assistant.llm.incremental_tokenizer import (
    IncrementalTokenizer,
    chars_before,
    overlaps,
    self_overlaps,
)
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.registry import load_registry, model_path

# -- without a model ------------------------------------------------------------------------


def _char_tokens(piece: str, add_special: bool) -> list[int]:
    return ([0] if add_special else []) + [ord(c) for c in piece]


def test_split_cuts_before_every_marker_but_the_first_character() -> None:
    inc = IncrementalTokenizer("<M>", _char_tokens)
    assert inc.split("<M>a<M>b<M>") == ["<M>a", "<M>b", "<M>"]
    assert inc.split("head<M>x") == ["head", "<M>x"]
    assert inc.split("") == [""]
    assert inc.split("no marker") == ["no marker"]
    assert "".join(inc.split("<M><M><M>x<M>")) == "<M><M><M>x<M>"


def test_split_ok_keeps_unsafe_cuts_together() -> None:
    inc = IncrementalTokenizer("<M>", _char_tokens, split_ok=lambda c: c == "\n")
    assert inc.split("a\n<M>b <M>c\n<M>") == ["a\n", "<M>b <M>c\n", "<M>"]


def test_tokens_and_count_match_and_bos_only_on_the_first_piece() -> None:
    inc = IncrementalTokenizer("<M>", _char_tokens)
    text = "<M>sys\n<M>user\n<M>"
    assert inc.tokens(text, True) == _char_tokens(text, True)
    assert inc.tokens(text, False) == _char_tokens(text, False)
    assert inc.count(text, True) == len(text) + 1
    # A repeated prompt is served from the memo.
    misses = inc._memo.misses
    inc.tokens(text, True)
    assert inc._memo.misses == misses and inc._memo.hits > 0


def test_memo_is_bounded_by_tokens_held() -> None:
    inc = IncrementalTokenizer("<M>", _char_tokens, max_tokens=50)
    for i in range(100):
        inc.tokens(f"<M>message number {i}\n", False)
    assert inc._memo.held <= 50
    assert inc.tokens("<M>message number 99\n", False) == _char_tokens(
        "<M>message number 99\n", False
    )


def test_overlap_helpers() -> None:
    assert self_overlaps(b"aba") and not self_overlaps(b"<|im_start|>")
    assert overlaps(b"x<|im_start|>", b"<|im_start|>")
    assert overlaps(b"|>abc", b"<|im_start|>")  # its start is the marker's end
    assert overlaps(b"abc<|im", b"<|im_start|>")  # its end is the marker's start
    assert not overlaps(b"<|im_end|>", b"<|im_start|>")
    assert chars_before(iter([b"a<b", b"<c", b"\xc3\xa9<", b"x"]), b"<") == {
        b"a",
        "é".encode(),
    }


# -- with the real tokenizers -----------------------------------------------------------------

FRAGMENTS = [
    "<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>",
    "<|endoftext|>", "<", "|", ">", "<|", "|>", "im_start", "\n", "\n\n", "\n\n\n", " ", "  ",
    "\t", "\r\n", "", "héllo", "漢字", "🙂", "\u200b", "ﬁ", "▁", "assistant", "user",
    "def f(x):\n    return x\n", "The quick brown fox", "   indented", "trailing   ",
    "1234567", "```tool_call\n{}\n```", "[Tool result: x]", "<table>", "\n<|im_start|>",
]


def _content(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 8)))


def _message(rng: random.Random, i: int) -> dict[str, Any]:
    kind = rng.random()
    if kind < 0.4:
        return {"role": "user", "content": _content(rng)}
    if kind < 0.7:
        return {"role": "assistant", "content": _content(rng)}
    if kind < 0.85:
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{i}.py"})},
        }
        return {"role": "assistant", "content": _content(rng), "tool_calls": [call]}
    return {"role": "tool", "tool_call_id": f"c{i}", "name": "read_file",
            "content": _content(rng)}


def _conversation(rng: random.Random) -> list[dict[str, Any]]:
    msgs = [_message(rng, i) for i in range(rng.randint(1, 10))]
    if rng.random() < 0.7:
        msgs.insert(0, {"role": "system", "content": _content(rng)})
    return msgs


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"]},
        },
    }
]


def _assert_exact(backend: Any, msgs: list[dict[str, Any]], tools: Any = None) -> None:
    text = backend.render_prompt(msgs, tools)
    full = backend.tokenize(text)
    assert backend.tokenize_prompt(text) == full, text
    assert backend.count_prompt(msgs, tools) == len(full), text


def _gemma_path() -> Path:
    entry = load_registry().get("gemma-3-270m")
    assert entry is not None
    return model_path(entry)


@pytest.fixture(scope="module")
def gemma_backend() -> Iterator[Any]:
    if not _gemma_path().exists():
        pytest.skip("gemma-3-270m is not provisioned")
    backend = LlamaBackend.load("gemma-3-270m", n_ctx=2048)
    # The app shows this base model the transcript form, which has no message marker (its
    # prompts are tokenized whole: tests/llm/test_transcript_real.py); the ChatML form
    # keeps these tests on a second vocabulary.
    backend.use_prompt_form("chat")
    yield backend
    backend.close()


@pytest.mark.integration
def test_the_transcript_form_is_tokenized_whole_and_exactly(gemma_backend: Any) -> None:
    gemma_backend.use_prompt_form("transcript")
    try:
        rng = random.Random(99)
        for _ in range(10):
            _assert_exact(gemma_backend, _conversation(rng), None)
        state, reason = gemma_backend.incremental_status
        assert state == "off" and "marker" in reason
    finally:
        gemma_backend.use_prompt_form("chat")
    assert gemma_backend.incremental_status[0] == "unchecked"


@pytest.fixture(params=["smollm2", "gemma"])
def backend(request: pytest.FixtureRequest) -> Any:
    if request.param == "smollm2":
        return request.getfixturevalue("real_backend")
    return request.getfixturevalue("gemma_backend")


@pytest.mark.integration
def test_cache_is_on_for_both_provisioned_models(backend: Any) -> None:
    backend.count_prompt([{"role": "user", "content": "hi"}])
    state, reason = backend.incremental_status
    assert state == "on", reason
    assert "<|im_start|>" in reason  # ChatML: native in SmolLM2, our fallback for gemma


@pytest.mark.integration
def test_random_conversations_tokenize_exactly(backend: Any) -> None:
    rng = random.Random(1234)
    for n in range(150):
        _assert_exact(backend, _conversation(rng), TOOLS if n % 5 == 0 else None)
    inc = backend._incremental
    assert inc is not None and inc._memo.hits > 0
    assert backend.incremental_status[0] == "on"


@pytest.mark.integration
def test_growing_and_pruned_conversation_stays_exact(backend: Any) -> None:
    rng = random.Random(99)
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are terse. <|im_start|>"}]
    for step in range(80):
        op = rng.random()
        if op < 0.55 or len(msgs) < 4:
            msgs.append(_message(rng, step))
        elif op < 0.7:
            del msgs[rng.randrange(1, len(msgs))]  # a message dropped from the middle
        elif op < 0.85:
            i = rng.randrange(1, len(msgs))
            msgs[i] = {**msgs[i], "content": "[Old tool output cleared]"}  # pruned
        else:
            msgs[1:3] = [{"role": "user", "content": "Summary:\n" + _content(rng)}]
        _assert_exact(backend, msgs)
    assert backend.incremental_status[0] == "on"


@pytest.mark.integration
def test_generation_uses_the_exact_prompt_tokens(real_backend: Any) -> None:
    msgs = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What is the capital of France? <|im_start|>"},
    ]
    result = None
    for ev in real_backend.generate(msgs, GenerationOptions(2, temperature=0.0)):
        if ev.result is not None:
            result = ev.result
    assert result is not None
    assert result.prompt_tokens == len(real_backend.tokenize(real_backend.render_prompt(msgs)))


@pytest.mark.integration
def test_failed_verification_turns_the_cache_off(embedded_model_path: Path) -> None:
    backend = LlamaBackend.load(str(embedded_model_path), n_ctx=512)
    try:
        good = backend._piece_tokens

        def wrong(piece: str, add_special: bool) -> list[int]:
            return good(piece, add_special)[:-1]  # loses a token per piece

        backend._piece_tokens = wrong  # type: ignore[method-assign]
        msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "Hello"}]
        full = backend.tokenize(backend.render_prompt(msgs))
        assert backend.count_prompt(msgs) == len(full)
        assert backend.incremental_status[0] == "off"
        assert "probe mismatch" in backend.incremental_status[1]
        assert backend.tokenize_prompt(backend.render_prompt(msgs)) == full
    finally:
        backend.close()


@pytest.mark.integration
def test_mismatch_on_a_real_prompt_turns_the_cache_off(embedded_model_path: Path) -> None:
    backend = LlamaBackend.load(str(embedded_model_path), n_ctx=512)
    try:
        backend.count_prompt([{"role": "user", "content": "warm up"}])
        inc = backend._incremental
        assert inc is not None and backend.incremental_status[0] == "on"
        good = inc._tokenize_piece

        def wrong_on_secret(piece: str, add_special: bool) -> list[int]:
            tokens = good(piece, add_special)
            return tokens[:-1] if "SECRET" in piece else tokens

        inc._tokenize_piece = wrong_on_secret
        msgs = [{"role": "user", "content": "a SECRET word"}]
        full = backend.tokenize(backend.render_prompt(msgs))
        assert backend.count_prompt(msgs) == len(full)  # still among the checked prompts
        assert backend.incremental_status[0] == "off"
        assert backend.count_prompt(msgs) == len(full)
    finally:
        backend.close()
