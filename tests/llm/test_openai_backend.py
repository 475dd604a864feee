"""The server engine against a real llama-cpp-python server on loopback (no HTTP mocks).

The server runs the embedded SmolLM2 with a 1,024-token window. Counts are checked against
the server's own ``/extras/tokenize`` and its ``usage.prompt_tokens``; a reply streams and
Stop closes the request (the server's log shows it saw the client go); a prompt over the
window is an overflow that teaches the backend the server's window; a server that is killed
mid-reply gives an error naming its address.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from assistant.llm.base import CancelToken, ContextOverflowError, GenerationOptions, ModelLoadError
from assistant.llm.openai_backend import ServerBackend, ServerConfig
from assistant.llm.server_http import ServerHTTPError, ServerStreamError, ServerUnreachable
from bench.local_server import LocalServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Name one colour of the rainbow."},
]


def _server_tokens(server: LocalServer, text: str) -> list[int]:
    got = httpx.post(f"{server.url}/extras/tokenize", json={"input": text}, trust_env=False)
    got.raise_for_status()
    return [int(t) for t in got.json()["tokens"]]


def _server_prompt_size(server: LocalServer, messages: list[dict[str, Any]]) -> int:
    got = httpx.post(
        f"{server.url}/v1/chat/completions",
        json={"messages": messages, "max_tokens": 1, "temperature": 0},
        trust_env=False, timeout=120,
    )
    got.raise_for_status()
    return int(got.json()["usage"]["prompt_tokens"])


@pytest.fixture(scope="module")
def backend(llama_server: LocalServer) -> Any:
    be = ServerBackend.connect(ServerConfig(llama_server.url, timeout_s=120))
    yield be
    be.close()


def test_connect_finds_the_server_model_and_exact_counts(
    backend: ServerBackend, llama_server: LocalServer, embedded_model_path: Path
) -> None:
    report = backend.report()
    assert report.server.startswith("llama-cpp-python server")
    assert report.model == str(embedded_model_path)
    assert report.exact_counts
    assert "/extras/tokenize" in report.counting
    assert "checked against the server's prompt sizes" in report.counting
    assert not report.native_tools
    info = backend.info
    assert info.exact_counts
    assert info.name == embedded_model_path.name
    assert info.extra["url"] == llama_server.url
    # llama-cpp-python does not report its window: the mode's window until it says more.
    assert info.trained_context == 0
    assert info.context_window == 10_000


def test_counts_are_the_servers_own(backend: ServerBackend, llama_server: LocalServer) -> None:
    tools = [{"type": "function", "function": {
        "name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
    conversations = [
        CHAT,
        [*CHAT, {"role": "assistant", "content": "Red."},
         {"role": "user", "content": "Ünïcödé → 漢字 🙂 <|im_start|> and `code`\n\n\tend"}],
    ]
    for messages in conversations:
        for with_tools in (None, tools):
            text = backend.render_prompt(messages, with_tools)
            count = backend.count_prompt(messages, with_tools)
            # The server's tokenizer on the rendered prompt ...
            assert backend.tokenize(text) == _server_tokens(llama_server, text)
            assert count == len(_server_tokens(llama_server, text))
            # ... and the prompt size the server reports for exactly what the engine sends.
            sent = backend._wire(messages, with_tools)[0]
            assert count == _server_prompt_size(llama_server, sent)
    plain = "Plain text, counted without any template: 12345 ünïcödé."
    assert backend.count(plain) == len(_server_tokens(llama_server, plain))
    assert backend.count("") == 0


def test_a_reply_streams(backend: ServerBackend) -> None:
    deltas: list[str] = []
    result = None
    for event in backend.generate(CHAT, GenerationOptions(max_tokens=6, temperature=0.0)):
        deltas.append(event.delta)
        result = event.result or result
    assert result is not None
    assert result.text == "".join(deltas)
    assert result.text.strip()
    assert result.finish_reason in ("stop", "length")
    assert 1 <= result.completion_tokens <= 6
    assert result.prompt_tokens == backend.count_prompt(CHAT)
    assert result.first_token_s is not None and result.first_token_s > 0
    assert result.ignored == ()


def test_stop_closes_the_request(backend: ServerBackend, llama_server: LocalServer) -> None:
    assert llama_server.log_path is not None
    before = llama_server.log_path.read_text(errors="replace").count("Disconnected from client")
    cancel = CancelToken()
    deltas: list[str] = []
    result = None
    story = [{"role": "user", "content": "Tell me a long story about a dragon."}]
    for event in backend.generate(
        story, GenerationOptions(max_tokens=400, temperature=0.0), cancel=cancel
    ):
        if event.delta:
            deltas.append(event.delta)
            if len(deltas) == 3:
                cancel.cancel()
        result = event.result or result
    assert result is not None
    assert result.finish_reason == "cancelled"
    assert result.stopped
    assert result.text == "".join(deltas)
    assert 3 <= len(deltas) < 50
    # The server saw the client go (it logs it) ...
    deadline = time.monotonic() + 30
    log = llama_server.log_path
    while log.read_text(errors="replace").count("Disconnected from client") <= before:
        assert time.monotonic() < deadline, "the server did not notice the closed request"
        time.sleep(0.1)
    # ... and answers the next request as usual.
    again = list(backend.generate(CHAT, GenerationOptions(max_tokens=2, temperature=0.0)))
    assert again[-1].result is not None and again[-1].result.finish_reason != "cancelled"


def test_stop_before_the_first_token(backend: ServerBackend) -> None:
    cancel = CancelToken()
    long_prompt = [{"role": "user", "content": "Summarize: " + "the cat sat on the mat. " * 80}]
    stream = backend.generate(long_prompt, GenerationOptions(max_tokens=50), cancel=cancel)
    cancel.cancel()
    events = list(stream)
    assert events[-1].result is not None
    assert events[-1].result.finish_reason == "cancelled"


def test_a_prompt_over_the_servers_window_is_an_overflow_that_names_it(
    llama_server: LocalServer,
) -> None:
    be = ServerBackend.connect(ServerConfig(llama_server.url, verify=False))
    try:
        window = llama_server.n_ctx
        too_long = [{"role": "system", "content": "You are terse."},
                    {"role": "user", "content": "word " * (window + 200)}]
        with pytest.raises(ContextOverflowError) as info:
            list(be.generate(too_long, GenerationOptions(max_tokens=8)))
        assert info.value.window == window
        assert info.value.prompt_tokens == be.count_prompt(too_long)
        assert "maximum context length" in str(info.value)
        # The backend now knows the server's window: the policy will aim at it.
        assert be.info.trained_context == window
        assert be.info.context_window == window
        # With the window known and exact counts, the next one is refused before sending.
        with pytest.raises(ContextOverflowError):
            be.generate(too_long, GenerationOptions(max_tokens=8))
    finally:
        be.close()


def test_a_window_setting_is_used_and_a_named_model_is_required(
    llama_server: LocalServer,
) -> None:
    be = ServerBackend.connect(ServerConfig(llama_server.url, window=800, verify=False))
    try:
        assert be.info.trained_context == 800
        assert be.report().window_source == "setting"
    finally:
        be.close()
    with pytest.raises(Exception, match="has no model named 'nope'") as info:
        ServerBackend.connect(ServerConfig(llama_server.url, model="nope"))
    assert llama_server.url in str(info.value)


def test_a_named_gguf_gives_the_models_own_template(
    llama_server: LocalServer, embedded_model_path: Path, tmp_path: Path
) -> None:
    be = ServerBackend.connect(
        ServerConfig(llama_server.url, tokenizer_gguf=str(embedded_model_path))
    )
    try:
        report = be.report()
        assert report.exact_counts
        assert f"gguf:{embedded_model_path.name}" in report.counting
        assert be.count_prompt(CHAT) == _server_prompt_size(llama_server, CHAT)
    finally:
        be.close()
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("hello", encoding="utf-8")
    with pytest.raises(ModelLoadError, match="not a GGUF file"):
        ServerBackend.connect(ServerConfig(llama_server.url, tokenizer_gguf=str(not_gguf)))


def test_api_key(embedded_model_path: Path, tmp_path: Path) -> None:
    with LocalServer(
        embedded_model_path, n_ctx=256, threads=1, api_key="sk-local-test",
        log_path=tmp_path / "server.log",
    ) as server:
        with pytest.raises(ServerHTTPError) as info:
            ServerBackend.connect(ServerConfig(server.url, api_key="wrong", verify=False))
        assert info.value.status == 401
        assert server.url in str(info.value)
        assert "API key" in str(info.value)
        be = ServerBackend.connect(ServerConfig(server.url, api_key="sk-local-test"))
        try:
            assert be.report().exact_counts
        finally:
            be.close()


def test_a_server_that_goes_away_mid_reply(embedded_model_path: Path, tmp_path: Path) -> None:
    server = LocalServer(embedded_model_path, n_ctx=256, threads=1,
                         log_path=tmp_path / "server.log")
    server.start()
    try:
        be = ServerBackend.connect(ServerConfig(server.url, verify=False))
        story = [{"role": "user", "content": "Tell me a long story about a dragon."}]
        got: list[str] = []
        with pytest.raises(ServerStreamError) as info:
            for event in be.generate(story, GenerationOptions(max_tokens=200)):
                if event.delta:
                    got.append(event.delta)
                    if len(got) == 2:
                        server.kill()
        assert server.url in str(info.value)
        assert got  # what arrived before is kept by the caller
        with pytest.raises(ServerUnreachable) as gone:
            list(be.generate(story, GenerationOptions(max_tokens=4)))
        assert server.url in str(gone.value)
        assert "connection refused" in str(gone.value)
        be.close()
    finally:
        server.stop()
    assert not server.running


def test_a_forgotten_local_server_ends_with_its_owner(embedded_model_path: Path) -> None:
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from bench.local_server import LocalServer\n"
        "s = LocalServer(sys.argv[1], n_ctx=128, threads=1)\n"
        "s.start()\n"
        "print(s.pid, flush=True)\n"  # and exit without stopping it
    )
    done = subprocess.run([sys.executable, "-c", code, str(embedded_model_path)],
                          capture_output=True, text=True, timeout=300, check=True)
    pid = int(done.stdout.strip())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
