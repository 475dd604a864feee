"""The read-ahead on the real model, through the agent as the app runs it (one short chat):
the send after reading its message less the last word sends the same prompt, evaluates
fewer prompt tokens than without, and on the embedded engine gives the same greedy reply.
On llama-server the reply is not compared: the server evaluates the prompt's last token in
one batch with the rest of what is new, and llama.cpp's logits depend on that split (the
same prompt split three ways gave three greedy replies: docs/BENCHMARKS.md, engines side by
side, "Reading the message while it is typed"); the embedded engine evaluates the last
token alone either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assistant.agent.events import AgentEvent, ModelCallFinished
from assistant.config import Sampling, Settings
from assistant.conversation import Conversation
from assistant.engine import build_engine
from assistant.llm.base import GenerationResult, LLMBackend
from assistant.llm.openai_backend import ServerBackend, ServerConfig
from bench.local_server import LocalServer, find_llama_server

pytestmark = pytest.mark.integration

FIRST = "My sister Ana lives in Porto and keeps three cats and a dog."
SECOND = "How many cats does my sister keep, and where does she live?"


def _chat(backend: LLMBackend, ahead: bool) -> tuple[GenerationResult, list[Any]]:
    """The two messages, the second read ahead less its last word first when ``ahead``;
    the second send's result and messages."""
    sent: list[Any] = []
    generate = backend.generate

    def recorded(messages: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append([dict(m) for m in messages])
        return generate(messages, *args, **kwargs)

    backend.generate = recorded  # type: ignore[method-assign]
    settings = Settings(sampling=Sampling(temperature=0.0, max_reply_tokens=24, seed=0))
    events: list[AgentEvent] = []
    engine = build_engine(backend, lambda: settings, None, events.append)
    conv = Conversation()
    engine.agent.chat(conv, FIRST)
    if ahead:
        got = engine.agent.read_ahead(conv, SECOND.rsplit(" ", 1)[0])
        assert got is not None and got.finished and got.evaluated > 10
    try:
        engine.agent.chat(conv, SECOND)
    finally:
        del backend.generate  # the class's again
    results = [e.result for e in events if isinstance(e, ModelCallFinished)]
    assert len(results) == 2
    return results[-1], sent[-1]


def _check(runs: list[tuple[GenerationResult, list[Any]]]) -> None:
    """Runs without, then with the read-ahead, each from an empty cache."""
    (without, sent_without), (ahead, sent_ahead) = runs
    assert sent_ahead == sent_without  # the same prompt ...
    assert ahead.prompt_tokens == without.prompt_tokens
    assert ahead.prompt_evaluated < 12 < without.prompt_evaluated  # ... mostly read ahead


def test_the_embedded_engine_reads_ahead(real_backend: Any) -> None:
    runs = []
    for ahead in (False, True):
        real_backend.reset_kv_cache()
        runs.append(_chat(real_backend, ahead))
    real_backend.reset_kv_cache()
    _check(runs)
    assert runs[1][0].text == runs[0][0].text and runs[0][0].text


BINARY = find_llama_server()


def test_llama_server_reads_ahead(embedded_model_path: Path, tmp_path: Path) -> None:
    """A server of its own for each run: its slot and its prompt cache start empty."""
    if BINARY is None:
        pytest.skip("no llama-server binary (`make llama-server` builds it)")
    runs = []
    for ahead in (False, True):
        with LocalServer(embedded_model_path, n_ctx=2048, threads=2,
                         log_path=tmp_path / f"server-{ahead}.log",
                         llama_server_bin=BINARY) as server:
            be = ServerBackend.connect(ServerConfig(server.url, timeout_s=120, seed=0))
            try:
                runs.append(_chat(be, ahead))
            finally:
                be.close()
    _check(runs)
