"""The server engine against llama.cpp's own ``llama-server`` (the server most people run).

Runs when a ``llama-server`` binary is given in ``ASSISTANT_LLAMA_SERVER``, built into the
checkout by ``make llama-server`` (``make test`` does, so CI runs these) or found on PATH. The
same real-process approach as test_openai_backend.py: the embedded SmolLM2 on 127.0.0.1, one
slot, a 1,024-token window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from assistant.config import Settings
from assistant.engine import server_config
from assistant.llm.base import CancelToken, ContextOverflowError, GenerationOptions
from assistant.llm.openai_backend import ServerBackend, ServerConfig
from assistant.llm.transcript_recall import HEADING_BEFORE
from bench.local_server import LocalServer, find_llama_server

BINARY = find_llama_server()

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not BINARY, reason="no llama-server binary (`make llama-server` builds it)"),
]

CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Name one colour of the rainbow."},
]
READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file", "description": "Read a text file in the workspace.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]},
    },
}


@pytest.fixture(scope="module")
def llama_cpp_server(embedded_model_path: Path, tmp_path_factory: pytest.TempPathFactory
                     ) -> Iterator[LocalServer]:
    assert BINARY is not None
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with LocalServer(embedded_model_path, n_ctx=1024, threads=2, log_path=log,
                     llama_server_bin=BINARY) as server:
        yield server


@pytest.fixture(scope="module")
def backend(llama_cpp_server: LocalServer) -> Iterator[ServerBackend]:
    be = ServerBackend.connect(ServerConfig(llama_cpp_server.url, timeout_s=120))
    yield be
    be.close()


def _server_prompt_size(server: LocalServer, body: dict[str, Any]) -> int:
    got = httpx.post(f"{server.url}/v1/chat/completions",
                     json={**body, "max_tokens": 1, "temperature": 0}, trust_env=False,
                     timeout=120)
    got.raise_for_status()
    return int(got.json()["usage"]["prompt_tokens"])


def test_connect_reads_window_and_counts_with_the_servers_template(
    backend: ServerBackend, llama_cpp_server: LocalServer
) -> None:
    report = backend.report()
    assert report.server.startswith("llama.cpp server")
    assert report.window == 1024 and report.window_source == "/props n_ctx"
    assert report.exact_counts
    assert "/apply-template" in report.counting
    assert "checked against the server's prompt sizes" in report.counting
    assert backend.info.trained_context == 1024
    assert backend.info.chat_template_source == "server"


def test_counts_are_the_servers_own(backend: ServerBackend, llama_cpp_server: LocalServer) -> None:
    for tools in (None, [READ_FILE]):
        sent = backend._wire(CHAT, tools)[0]
        assert backend.count_prompt(CHAT, tools) == _server_prompt_size(
            llama_cpp_server, {"messages": sent}
        )
    text = backend.render_prompt(CHAT)
    assert text.startswith("<|im_start|>system\nYou are terse.")


def test_the_prompt_cache_is_kept_warm(backend: ServerBackend) -> None:
    options = GenerationOptions(max_tokens=4, temperature=0.0)
    first = list(backend.generate(CHAT, options))[-1].result
    assert first is not None
    longer = [*CHAT, {"role": "assistant", "content": first.text},
              {"role": "user", "content": "Another one."}]
    second = list(backend.generate(longer, options))[-1].result
    assert second is not None
    # cache_prompt: the server reports most of the prompt as taken from its cache.
    assert second.prompt_reused >= backend.count_prompt(CHAT) - 2
    assert second.prompt_evaluated < second.prompt_tokens


def _evaluated_again(
    server: LocalServer,
    reuse: int,
    first: list[dict[str, str]],
    then: Callable[[str], list[dict[str, str]]],
) -> int:
    """Prompt tokens the server evaluates for ``then(first reply)`` right after ``first``,
    on a fresh connection sending ``n_cache_reuse`` ``reuse`` (4-token replies)."""
    options = GenerationOptions(max_tokens=4, temperature=0.0)
    be = ServerBackend.connect(ServerConfig(server.url, timeout_s=120, cache_reuse=reuse))
    try:
        reply = list(be.generate(first, options))[-1].result
        assert reply is not None
        second = list(be.generate(then(reply.text), options))[-1].result
        assert second is not None and second.text
        return second.prompt_evaluated
    finally:
        be.close()


def _tokens_of(server: LocalServer, text: str) -> int:
    """The tokens ``text`` adds as a user message (the server's own count)."""
    be = ServerBackend.connect(ServerConfig(server.url, verify=False))
    try:
        return (be.count_prompt([CHAT[0], {"role": "user", "content": text}])
                - be.count_prompt([CHAT[0], {"role": "user", "content": ""}]))
    finally:
        be.close()


def test_cache_reuse_keeps_what_followed_text_the_next_prompt_no_longer_has(
    llama_cpp_server: LocalServer,
) -> None:
    """``cache_reuse``: the request asks the server to move the cached question that followed
    a recall block the next prompt drops, instead of evaluating it again (the server's
    ``n_cache_reuse``); without it everything after the dropped block is evaluated again."""
    block = "Earlier in this chat: " + " ".join(
        f"note {i} is about item {i * 3}." for i in range(40))
    question = ("Here is my question about the garden plan: " + " ".join(
        f"bed {i} holds {i * 2} tomato plants and {i + 1} rows of beans," for i in range(12))
        + " which bed holds the most plants?")
    def second_call(first_text: str) -> list[dict[str, str]]:
        return [CHAT[0], {"role": "user", "content": question},
                {"role": "assistant", "content": first_text},
                {"role": "user", "content": "And the fewest?"}]

    first = [CHAT[0], {"role": "user", "content": f"{block}\n\n{question}"}]
    evaluated = {reuse: _evaluated_again(llama_cpp_server, reuse, first, second_call)
                 for reuse in (0, 32)}
    question_tokens = _tokens_of(llama_cpp_server, question)
    assert evaluated[0] > question_tokens, evaluated
    assert evaluated[32] < evaluated[0] - question_tokens // 2, evaluated


def test_the_shipped_chunk_size_keeps_the_history_after_a_focus_window_restart(
    llama_cpp_server: LocalServer,
) -> None:
    """A focus window that restarts (recall's call shows the newest history from a later
    message) begins with a short earlier reply. llama-server only skips cached text, so a
    first run shorter than ``n_cache_reuse`` ends its reuse there and the rest of the
    history is evaluated again. With the size the app sends llama-server (32) the short
    reply is moved and so is the question and answer after it; with 64 (the embedded
    engine's, sent before) they are evaluated again."""
    shipped = server_config(Settings()).cache_reuse
    reply = ("I'm sorry for the confusion. I'll be happy to help with any questions or "
             "issues you're facing. I'm")
    rules = "Ground rules for this chat: " + " ".join(
        f"rule {i} says item {i} stays in drawer {i * 7}." for i in range(12))
    numbers = "Some numbers to remember: " + " ".join(
        f"room {i} seats {i * 4} people," for i in range(12)) + " and that is all."
    question = ("Let me think out loud about the offsite: " + " ".join(
        f"day {i} starts at {i + 7} o'clock with {i * 3} talks," for i in range(10))
        + " so which day starts latest?")
    block = "Earlier in this chat (excerpts): " + " ".join(
        f"note {i} is about room {i * 2}." for i in range(10))
    before = [CHAT[0], {"role": "user", "content": rules},
              {"role": "assistant", "content": reply},
              {"role": "user", "content": numbers},
              {"role": "assistant", "content": reply},
              {"role": "user", "content": f"{block}\n\n{question}"}]

    def restarted(first_text: str) -> list[dict[str, str]]:
        return [CHAT[0], {"role": "assistant", "content": reply},
                {"role": "user", "content": question},
                {"role": "assistant", "content": first_text},
                {"role": "user", "content": f"{block}\n\nAnd the earliest?"}]

    evaluated = {reuse: _evaluated_again(llama_cpp_server, reuse, before, restarted)
                 for reuse in (64, shipped)}
    question_tokens = _tokens_of(llama_cpp_server, question)
    assert shipped < 64
    assert evaluated[shipped] < evaluated[64] - question_tokens // 2, evaluated


def test_a_focused_call_evaluates_only_recalls_block_beyond_a_plain_one(
    llama_cpp_server: LocalServer,
) -> None:
    """Recall's block is written for the message just sent, so the server evaluates it after
    every send, beside the message itself; the rest of the prompt is cached, so the block is
    all that a focused call evaluates beyond a plain one (W2 on llama-server: the policy's
    whole first-token gap to the front cut; docs/BENCHMARKS.md, "W2's per-call pairs")."""
    fact = "The local cache is checked every 15 minutes before we export it."
    question = "How often is the local cache checked?"
    first = [CHAT[0], {"role": "user", "content": f"Ground rules: {fact} Keep answers short."}]

    def then(block: str) -> Callable[[str], list[dict[str, str]]]:
        return lambda reply: [*first, {"role": "assistant", "content": reply},
                              {"role": "user", "content": f"{block}{question}"}]

    label = "- (turn 1, I said) "
    block = f"{HEADING_BEFORE}\n{label}{fact}\n\n"
    shipped = server_config(Settings()).cache_reuse
    plain = _evaluated_again(llama_cpp_server, shipped, first, then(""))
    focused = _evaluated_again(llama_cpp_server, shipped, first, then(block))
    excerpt = _tokens_of(llama_cpp_server, f"{label}{fact}")
    heading = _tokens_of(llama_cpp_server, HEADING_BEFORE)
    # Only the block is added to what the plain call evaluates (a token of seam at most).
    assert focused - plain <= excerpt + heading + 3, (focused, plain, excerpt, heading)
    assert focused - plain >= excerpt, (focused, plain, excerpt)


def test_stop_and_overflow(backend: ServerBackend) -> None:
    cancel = CancelToken()
    deltas: list[str] = []
    result = None
    story = [{"role": "user", "content": "Tell me a long story about a dragon."}]
    for event in backend.generate(story, GenerationOptions(max_tokens=300), cancel=cancel):
        if event.delta:
            deltas.append(event.delta)
            if len(deltas) == 3:
                cancel.cancel()
        result = event.result or result
    assert result is not None and result.finish_reason == "cancelled"
    assert len(deltas) < 50
    too_long = [{"role": "system", "content": "s"}, {"role": "user", "content": "word " * 1200}]
    with pytest.raises(ContextOverflowError) as info:
        backend.generate(too_long, GenerationOptions(max_tokens=4))
    assert info.value.window == 1024


def test_overflow_answer_when_the_window_set_is_too_large(llama_cpp_server: LocalServer) -> None:
    be = ServerBackend.connect(ServerConfig(llama_cpp_server.url, window=4096, verify=False))
    try:
        too_long = [{"role": "system", "content": "s"},
                    {"role": "user", "content": "word " * 1200}]
        with pytest.raises(ContextOverflowError) as info:
            list(be.generate(too_long, GenerationOptions(max_tokens=4)))
        assert (info.value.prompt_tokens, info.value.window) == (be.count_prompt(too_long), 1024)
        assert "exceeds the available context size" in str(info.value)
        assert be.info.trained_context == 1024
    finally:
        be.close()


def test_native_tool_calls_when_the_template_has_them(
    embedded_model_path: Path, tmp_path: Path
) -> None:
    # SmolLM2's own template has no tools: above, "auto" chose the text protocol. With a
    # ChatML template that renders tools and tool calls (tests/data/chatml_tools.jinja), the
    # server says its template supports tool calls and "auto" sends them natively: the
    # history with a call and its result goes as is, and the count is still the server's.
    template = Path(__file__).resolve().parents[1] / "data" / "chatml_tools.jinja"
    assert BINARY is not None
    with LocalServer(embedded_model_path, n_ctx=1024, threads=2, llama_server_bin=BINARY,
                     log_path=tmp_path / "server.log",
                     extra_args=("--chat-template-file", str(template))) as server:
        be = ServerBackend.connect(ServerConfig(server.url, timeout_s=120))
        try:
            assert be.info.supports_native_tools
            assert be.report().exact_counts
            call = {"id": "call_1", "type": "function", "function": {
                "name": "read_file", "arguments": '{"path": "notes.txt"}'}}
            history = [
                {"role": "system", "content": "Call tools when they help."},
                {"role": "user", "content": "Read notes.txt"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "name": "read_file",
                 "content": "buy milk"},
                {"role": "user", "content": "What does it say?"},
            ]
            sent, sent_tools = be._wire(history, [READ_FILE])
            assert sent == history and sent_tools == [READ_FILE]
            assert "<tool_call>" in be.render_prompt(history, [READ_FILE])
            assert be.count_prompt(history, [READ_FILE]) == _server_prompt_size(
                server, {"messages": sent, "tools": sent_tools}
            )
            result = list(be.generate(history, GenerationOptions(max_tokens=8, temperature=0.0),
                                      tools=[READ_FILE]))[-1].result
            assert result is not None and result.finish_reason in ("stop", "length")
        finally:
            be.close()


def test_a_warmed_draft_is_kept_in_the_slot_and_the_send_reads_only_the_rest(
    llama_cpp_server: LocalServer,
) -> None:
    """The read-ahead (:meth:`ServerBackend.warm`): one token asked and discarded, the whole
    draft evaluated and kept in the slot's cache; the send evaluates what follows it. Its
    reply starts as the same request evaluated whole (``cache_prompt`` false) does; it is
    not compared further, the logits depending on the split into batches (docs/BENCHMARKS.md,
    "Reading the message while it is typed")."""
    history = [*CHAT, {"role": "assistant", "content": "Blue."},
               {"role": "user", "content": "Which colour of the rainbow comes after green?"}]
    draft = [*history[:-1], {"role": "user", "content": "Which colour of the rainbow comes"}]
    options = GenerationOptions(max_tokens=12, temperature=0.0)
    be = ServerBackend.connect(ServerConfig(llama_cpp_server.url, timeout_s=120, seed=0))
    try:
        warmed = be.warm(draft)
        assert warmed.finished and warmed.prompt_tokens == be.count_prompt(draft)
        assert warmed.evaluated > 10
        hot = list(be.generate(history, options))[-1].result
        ahead, sent = (be.tokenize(be.render_prompt(m)) for m in (draft, history))
        shared = next(i for i, (a, b) in enumerate(zip(ahead, sent, strict=False)) if a != b)
        whole = {**be._body(history, None, options), "stream": False, "cache_prompt": False}
        whole.pop("stream_options")
        got = httpx.post(f"{llama_cpp_server.url}/v1/chat/completions", json=whole,
                         trust_env=False, timeout=120)
        got.raise_for_status()
        assert got.json()["usage"]["prompt_tokens"] == hot.prompt_tokens if hot else False
        cold = got.json()["choices"][0]["message"]["content"]
    finally:
        be.close()
    assert hot is not None
    # Only the last word and the template's end were left (timings.prompt_n).
    assert hot.prompt_evaluated == len(sent) - shared < 12
    assert hot.prompt_tokens == len(sent)
    assert hot.text.split()[:2] == cold.split()[:2]
