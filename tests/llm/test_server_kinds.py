"""The server kinds that cannot run here (vLLM, Ollama, LM Studio, a plain OpenAI-compatible
server), each against a loopback stand-in built from its documentation
(tests/fakes/server_kinds.py): what the probe recognizes, the window and where it came from,
native tool calls, the notes, and how prompts are counted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from assistant.llm.fallback_tokenizer import Cl100kTokenizer
from assistant.llm.openai_backend import ServerBackend, ServerConfig
from assistant.llm.server_counting import LocalRendered, ServerRendered, choose_counting
from assistant.llm.server_http import ServerHTTP
from assistant.llm.server_probe import ServerProfile, probe
from assistant.llm.template import ChatTemplate
from tests.fakes import server_kinds as kinds
from tests.fakes.openai_server import FakeOpenAIServer, fake_openai_server

CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Name one colour of the rainbow, please."},
    {"role": "assistant", "content": "Red."},
    {"role": "user", "content": "And another one?"},
]
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


@contextmanager
def _server(kind: dict[str, Any]) -> Iterator[tuple[FakeOpenAIServer, ServerHTTP]]:
    with fake_openai_server(lambda messages: "Orange.", **kind) as server:
        http = ServerHTTP(server.url, timeout_s=10)
        try:
            yield server, http
        finally:
            http.close()


def _probe(kind: dict[str, Any], model: str = "") -> tuple[ServerProfile, FakeOpenAIServer]:
    with _server(kind) as (server, http):
        return probe(http, model), server


def _estimate(messages: list[dict[str, Any]]) -> int:
    """What a cl100k estimate of ``messages`` in ChatML is."""
    return len(Cl100kTokenizer().tokenize(ChatTemplate(None).render(messages, None)))


# -- vLLM ----------------------------------------------------------------------------------

def test_vllm_is_recognized_by_max_model_len_and_its_tokenizer() -> None:
    profile, server = _probe(kinds.VLLM(max_model_len=8192).kind())
    assert profile.kind == "vllm" and profile.kind_name == "vLLM"
    assert profile.model == kinds.VLLM_MODEL
    assert (profile.window, profile.window_source) == (8192, "/v1/models max_model_len")
    assert profile.tokenizer == "vllm" and profile.server_renders
    assert not profile.native_tools and not profile.notes
    assert server.asked("POST", "/tokenize") == [{"model": kinds.VLLM_MODEL, "prompt": "Hello"}]


def test_vllm_without_its_tokenizer_keeps_the_window_and_estimates() -> None:
    vllm = kinds.VLLM(max_model_len=4096, tokenizer=False)
    with _server(vllm.kind()) as (_, http):
        profile = probe(http)
        counting, _ = choose_counting(http, profile)
    assert profile.kind == "vllm" and profile.window == 4096
    assert profile.tokenizer is None and not profile.server_renders
    assert isinstance(counting, LocalRendered) and not counting.exact
    assert counting.count(CHAT, None) == _estimate(CHAT)


def test_vllm_counts_are_the_servers_own_tokenize_of_the_conversation() -> None:
    vllm = kinds.VLLM()
    with _server(vllm.kind()) as (server, http):
        profile = probe(http)
        counting, _ = choose_counting(http, profile)
        assert isinstance(counting, ServerRendered) and counting.exact
        assert "/tokenize" in counting.description
        for tools in (None, TOOLS):
            count = counting.count(CHAT, tools)
            sent = server.asked("POST", "/tokenize")[-1]
            # The whole conversation went to /tokenize, as vLLM's chat form of it ...
            assert sent["messages"] == CHAT and sent["model"] == kinds.VLLM_MODEL
            assert sent["add_generation_prompt"] is True
            assert sent.get("tools") == tools
            # ... and the count is the server's own, not an estimate.
            body = {"messages": CHAT, **({"tools": tools} if tools else {})}
            assert count == vllm.prompt_tokens(body)
        assert counting.count(CHAT, None) != _estimate(CHAT)
        # The rendered prompt is the server's (its tokens, detokenized).
        assert counting.render(CHAT, None) == kinds.ToyVocab.BOS + kinds.vllm_render(
            {"messages": CHAT})
        # Text is tokenized by the server as well, without special tokens when counting.
        assert counting.count_text("Plain words, counted.") == 7  # 3 words, 2 spaces, 2 marks
        assert server.asked("POST", "/tokenize")[-1] == {
            "model": kinds.VLLM_MODEL, "prompt": "Plain words, counted.",
            "add_special_tokens": False}


def test_vllm_connection_test_shows_exact_checked_counts() -> None:
    with fake_openai_server(lambda m: "Orange.", **kinds.VLLM(max_model_len=8192).kind()) as s:
        backend = ServerBackend.connect(ServerConfig(s.url, timeout_s=10))
        try:
            report = backend.report()
            count = backend.count_prompt(CHAT)
            sent = backend._wire(CHAT, None)[0]
        finally:
            backend.close()
    assert report.server == "vLLM"
    assert (report.window, report.known_window) == (8192, 8192)
    assert report.window_source == "/v1/models max_model_len"
    assert report.exact_counts and "checked against the server's prompt sizes" in report.counting
    assert not report.native_tools and not report.notes
    assert backend.info.exact_counts and backend.info.architecture == "vllm"
    assert count == kinds.VLLM().prompt_tokens({"messages": sent})


# -- Ollama --------------------------------------------------------------------------------

def test_ollama_window_from_the_loaded_model_and_native_tools() -> None:
    profile, server = _probe(kinds.ollama(loaded_context=16384, num_ctx=2048), "llama3.2")
    assert profile.kind == "ollama" and profile.kind_name == "Ollama"
    assert profile.model == kinds.OLLAMA_MODEL  # the ":latest" tag is found
    assert profile.version == kinds.OLLAMA_VERSION
    # /api/ps is what the model runs with now; it wins over the Modelfile's num_ctx.
    assert (profile.window, profile.window_source) == (16384, "/api/ps context_length")
    assert profile.native_tools and not profile.notes
    assert profile.tokenizer is None and not profile.server_renders
    assert server.asked("POST", "/api/show") == [{"model": kinds.OLLAMA_MODEL}]


def test_ollama_window_from_num_ctx_when_the_model_is_not_loaded() -> None:
    profile, _ = _probe(kinds.ollama(num_ctx=6144))
    assert (profile.window, profile.window_source) == (6144, "/api/show num_ctx")
    assert not profile.notes


def test_ollama_with_a_malformed_list_of_running_models_still_reads_num_ctx() -> None:
    kind = kinds.ollama(num_ctx=6144)
    kind["routes"][("GET", "/api/ps")] = lambda body: (200, {"models": ["llama3.2", 7, None]})
    profile, _ = _probe(kind)
    assert profile.kind == "ollama"
    assert (profile.window, profile.window_source) == (6144, "/api/show num_ctx")
    kind["routes"][("GET", "/api/ps")] = lambda body: (200, {"models": 3})
    profile, _ = _probe(kind)
    assert (profile.window, profile.window_source) == (6144, "/api/show num_ctx")


def test_ollama_that_does_not_say_its_window_gets_a_note() -> None:
    profile, _ = _probe(kinds.ollama(capabilities=("completion",)))
    assert profile.kind == "ollama"
    assert profile.window is None and profile.window_source == ""
    assert not profile.native_tools
    assert len(profile.notes) == 1
    assert "cuts longer prompts" in profile.notes[0] and "Settings, Engine" in profile.notes[0]


def test_ollama_connection_test_shows_estimates_and_the_note() -> None:
    with fake_openai_server(lambda m: "Orange.", **kinds.ollama()) as server:
        backend = ServerBackend.connect(ServerConfig(server.url, timeout_s=10))
        try:
            report = backend.report()
            count = backend.count_prompt(CHAT)
        finally:
            backend.close()
    assert report.server == f"Ollama {kinds.OLLAMA_VERSION}"
    assert not report.exact_counts and "cl100k" in report.counting
    assert "not checked: an estimate" in report.counting
    assert report.known_window == 0 and report.window == 10_000  # the mode's window
    assert report.notes and report.notes[0] in report.lines()
    assert report.native_tools  # Ollama says the model has tools
    assert count == _estimate(backend._wire(CHAT, None)[0])
    # Estimates only: no request but the chat went to a tokenizer.
    assert not server.asked("POST", "/tokenize")


# -- LM Studio -----------------------------------------------------------------------------

def test_lmstudio_loaded_model_window_and_tool_use() -> None:
    profile, server = _probe(kinds.lmstudio(loaded_context=4096))
    assert profile.kind == "lmstudio" and profile.kind_name == "LM Studio"
    assert profile.model == kinds.LMSTUDIO_LOADED
    assert profile.models == (kinds.LMSTUDIO_LOADED, kinds.LMSTUDIO_IDLE, kinds.LMSTUDIO_PLAIN)
    assert (profile.window, profile.window_source) == (
        4096, "/api/v0/models loaded_context_length")
    assert profile.native_tools and not profile.notes
    assert profile.tokenizer is None and not profile.server_renders
    # It answered 200 with an error to the paths it lacks; the probe was not fooled.
    assert server.asked("GET", "/props") and server.asked("GET", "/api/version")


def test_lmstudio_model_not_loaded_and_without_tool_use() -> None:
    idle, _ = _probe(kinds.lmstudio(), kinds.LMSTUDIO_IDLE)
    assert (idle.window, idle.window_source) == (131072, "/api/v0/models max_context_length")
    assert idle.native_tools
    plain, _ = _probe(kinds.lmstudio(), kinds.LMSTUDIO_PLAIN)
    assert plain.kind == "lmstudio" and plain.window == 32768
    assert not plain.native_tools


def test_lmstudio_counts_are_cl100k_estimates() -> None:
    with _server(kinds.lmstudio()) as (_, http):
        counting, template = choose_counting(http, probe(http))
    assert isinstance(counting, LocalRendered) and not counting.exact
    assert "cl100k" in counting.description
    assert template.origin == ChatTemplate(None).origin
    assert counting.count(CHAT, None) == _estimate(CHAT)


def test_lmstudio_connection_test_shows_its_window_and_native_tool_calls() -> None:
    with fake_openai_server(lambda m: "Orange.", **kinds.lmstudio(loaded_context=4096)) as s:
        backend = ServerBackend.connect(ServerConfig(s.url, timeout_s=10))
        try:
            report = backend.report()
        finally:
            backend.close()
    assert report.server == "LM Studio"
    assert (report.window, report.known_window) == (4096, 4096)
    assert report.window_source == "/api/v0/models loaded_context_length"
    assert report.native_tools and "Tool calls: the server's native tool calls" in report.lines()
    assert not report.exact_counts and "not checked: an estimate" in report.counting
    assert backend.info.trained_context == 4096 and backend.info.supports_native_tools

# -- a plain OpenAI-compatible server ------------------------------------------------------

@pytest.mark.parametrize(("entry", "window", "source"), [
    ({"id": "m", "context_length": 32768}, 32768, "/v1/models context_length"),
    ({"id": "m", "context_window": 16000}, 16000, "/v1/models context_window"),
    ({"id": "m", "meta": {"vocab_type": 2, "n_ctx_train": 131072}}, 131072,
     "/v1/models meta.n_ctx_train (trained length)"),
    ({"id": "m", "context_length": 0, "meta": {"n_ctx_train": 2048}}, 2048,
     "/v1/models meta.n_ctx_train (trained length)"),
    # llama-server's entry (tools/server/server-context.cpp): the slot's window, then the
    # trained length; the window it runs with is the one that counts.
    ({"id": "m", "meta": {"n_ctx": 4096, "n_ctx_train": 32768}}, 4096, "/v1/models meta.n_ctx"),
    ({"id": "m"}, None, ""),
])
def test_a_plain_server_window_comes_from_its_models_entry(
    entry: dict[str, Any], window: int | None, source: str
) -> None:
    profile, server = _probe(kinds.generic(entry))
    assert profile.kind == "openai" and profile.kind_name == "OpenAI-compatible server"
    assert (profile.window, profile.window_source) == (window, source)
    assert not profile.native_tools and profile.tokenizer is None and not profile.notes
    # Every other kind's question was asked and answered 404.
    asked = {(m, p) for m, p, _ in server.calls}
    assert {("GET", "/props"), ("POST", "/extras/tokenize"), ("GET", "/api/version"),
            ("GET", "/api/v0/models")} <= asked
