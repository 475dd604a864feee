"""The HTTP layer of the server engine on real sockets: nothing listening, a server that
accepts and never answers, and the error answers the known servers give for a prompt that
does not fit."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from assistant.llm.base import ContextOverflowError
from assistant.llm.server_http import (
    ServerHTTP,
    ServerTimeout,
    ServerUnreachable,
    _sse_data,
    error_message,
    overflow_from,
)
from bench.local_server import free_port


def test_nothing_listening_is_a_clear_error_naming_the_address() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    http = ServerHTTP(url)
    try:
        with pytest.raises(ServerUnreachable) as info:
            http.get("/v1/models")
    finally:
        http.close()
    text = str(info.value)
    assert url in text
    assert "connection refused" in text


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never sends a byte."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    sock.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, name="silent-server")
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        sock.close()


def test_a_server_that_never_answers_times_out_naming_the_address(silent_server: str) -> None:
    http = ServerHTTP(silent_server, timeout_s=0.5)
    try:
        with pytest.raises(ServerTimeout) as info:
            http.post("/v1/chat/completions", {"messages": []})
        assert silent_server in str(info.value)
        assert "0.5 s" in str(info.value)
        with pytest.raises(ServerTimeout):
            http.stream("/v1/chat/completions", {"messages": [], "stream": True})
    finally:
        http.close()


@pytest.mark.parametrize(
    ("status", "body", "prompt", "window"),
    [
        # llama-cpp-python (and OpenAI, vLLM)
        (400, {"error": {"message": "This model's maximum context length is 512 tokens. "
                         "However, you requested 739 tokens (731 in the messages, 8 in the "
                         "completion). Please reduce the length of the messages or completion.",
                         "type": "invalid_request_error", "code": "context_length_exceeded"}},
         731, 512),
        # llama.cpp's llama-server
        (400, {"error": {"code": 400, "type": "exceed_context_size_error",
                         "message": "request (9412 tokens) exceeds the available context size "
                         "(8192 tokens), try increasing it", "n_prompt_tokens": 9412,
                         "n_ctx": 8192}}, 9412, 8192),
        # an older llama-server: no numbers
        (400, {"error": {"code": 400, "type": "invalid_request_error", "message": "the request "
                         "exceeds the available context size, try increasing the context size "
                         "or enable context shift"}}, 0, 0),
        # vLLM's newer wording
        (400, {"object": "error", "message": "This model's maximum context length is 4096 "
               "tokens. However, your request has 5000 input tokens.", "code": 400},
         5000, 4096),
    ],
)
def test_context_exceeded_answers_become_overflows(
    status: int, body: dict[str, object], prompt: int, window: int
) -> None:
    message = error_message(body, "")
    got = overflow_from(status, body, message)
    assert isinstance(got, ContextOverflowError)
    assert (got.prompt_tokens, got.window) == (prompt, window)
    assert message in str(got)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, {"error": {"message": "This model's maximum context length is 512 tokens."}}),
        (400, {"error": {"message": "Invalid grammar"}}),
        (404, {"detail": "Not Found"}),
    ],
)
def test_other_errors_are_not_overflows(status: int, body: dict[str, object]) -> None:
    assert overflow_from(status, body, error_message(body, "")) is None


def test_error_messages_are_read_from_every_shape() -> None:
    assert error_message({"error": {"message": "a"}}, "") == "a"
    assert error_message({"error": "b"}, "") == "b"
    assert error_message({"detail": "c"}, "") == "c"
    assert error_message(None, "  plain\n text ") == "plain text"
    assert error_message(None, "") == "no message"


def test_server_sent_events_skip_pings_and_join_lines() -> None:
    lines = [
        ": ping - 2026-01-01", "", "data: {\"a\": 1}", "", "event: x", "data: one",
        "data: two", "", "data: [DONE]", "",
    ]
    assert list(_sse_data(lines)) == ['{"a": 1}', "one\ntwo", "[DONE]"]
