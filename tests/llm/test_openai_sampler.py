"""What the server engine sends a llama.cpp-family server to sample with (no server needed:
the request body alone; the real server's replies: tests/llm/test_llama_server.py)."""

from __future__ import annotations

from typing import Any

from assistant.llm.base import GenerationOptions
from assistant.llm.openai_backend import (
    LLAMA_SAMPLER,
    LLAMA_SERVER_SAMPLER,
    ServerBackend,
    ServerConfig,
)
from assistant.llm.server_counting import Counting
from assistant.llm.server_http import ServerHTTP
from assistant.llm.server_probe import ServerProfile
from assistant.llm.template import ChatTemplate

URL = "http://127.0.0.1:9"
CHAT = [{"role": "user", "content": "Which port?"}]


def _body(kind: str, sampler: dict[str, Any] | None = None) -> dict[str, Any]:
    backend = ServerBackend(
        ServerHTTP(URL), ServerConfig(URL, sampler=sampler),
        ServerProfile(base_url=URL, kind=kind, models=("m",), model="m"),  # type: ignore[arg-type]
        Counting(), ChatTemplate(None),
    )
    return backend._body(CHAT, None, GenerationOptions(max_tokens=8, temperature=0.0))


def test_llama_server_penalizes_only_the_last_few_tokens() -> None:
    """llama-server feeds every prompt token into its sampler before the reply, so a repeat
    penalty over its default 64 tokens falls on the question and recall's excerpts the
    answer copies (the embedded engine penalizes only what it samples): the app's window
    is 8 tokens, the template's tail and then the reply's own."""
    body = _body("llama.cpp")
    assert body["repeat_last_n"] == 8 and body["repeat_penalty"] == 1.1
    assert {k: body[k] for k in LLAMA_SERVER_SAMPLER} == LLAMA_SERVER_SAMPLER
    assert body["top_k"] == 40 and body["min_p"] == 0.05 and body["cache_prompt"] is True


def test_llama_cpp_python_servers_sample_as_the_embedded_engine() -> None:
    """llama-cpp-python's server penalizes only sampled tokens, like the embedded engine:
    it gets the embedded engine's settings and no field it does not know."""
    body = _body("llama-cpp-python")
    assert {k: body[k] for k in LLAMA_SAMPLER} == LLAMA_SAMPLER
    assert "repeat_last_n" not in body


def test_a_config_sampler_replaces_the_apps_and_other_servers_get_none() -> None:
    front_end = {"top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1}
    body = _body("llama.cpp", front_end)
    assert body["repeat_penalty"] == 1.1 and "repeat_last_n" not in body
    plain = _body("openai")
    assert not {"top_k", "min_p", "repeat_penalty"} & plain.keys()
