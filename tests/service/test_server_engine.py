"""The app's engine on an OpenAI-compatible server: the session service (the core of the
window and the terminal chat) with ``engine.kind = "server"``, against a real
llama-cpp-python server on loopback, on the real model worker thread.

A chat, a streamed reply stopped by the user, a compaction written by the server's model,
an overflow the server reports (its window is smaller than the one set) followed by the
compaction and the single retry, a server that goes away mid-reply and comes back, and a
server that is not there at all: each through ``ChatService`` as the faces use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from assistant.agent.events import (
    AssistantDelta,
    ContextChanged,
    ContextUsage,
    Notice,
    TurnFinished,
)
from assistant.compaction.events import CompactionFinished, CompactionStarted
from assistant.config import Settings
from assistant.conversation import CompactionReason
from assistant.llm.openai_backend import ServerBackend
from assistant.service.events import ModelChanged
from bench.local_server import LocalServer, free_port

from .conftest import Rig

pytestmark = [pytest.mark.integration, pytest.mark.slow]

Make = Callable[..., Rig]
WAIT_S = 600.0


def _settings(tmp_path: Path, url: str, *, window: int = 0, reply: int = 16) -> Settings:
    s = Settings(workspace=str(tmp_path / "workspace"))
    s.engine.server.base_url = url
    s.engine.server.window = window
    s.engine.server.timeout_s = 120
    s.engine.kind = "server"
    s.sampling.max_reply_tokens = reply
    s.sampling.temperature = 0.0
    s.step_limit = 1
    return s


def _connected(make_rig: Make, settings: Settings) -> Rig:
    """A service on the real worker thread that has connected (or failed to) to the server
    (connecting checks the counts with three small requests: slow on a busy machine)."""
    rig = make_rig(settings=settings, threaded=True, load=False)
    rig.service.load_model()
    _settle(rig)
    return rig


def _wait(rig: Rig, done: Callable[[], bool]) -> None:
    assert rig.loop is not None
    rig.loop.run_until(done, timeout=WAIT_S)


def _settle(rig: Rig) -> None:
    _wait(rig, lambda: rig.service.model.state != "loading" and not rig.service.jobs.busy
          and not rig.service.queue)


def _send(rig: Rig, text: str) -> None:
    assert rig.service.submit(text)
    _settle(rig)


def _roles(rig: Rig) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in rig.service.chat.conversation.messages]


def _log_count(server: LocalServer, text: str) -> int:
    assert server.log_path is not None
    return server.log_path.read_text(errors="replace").count(text)


def test_a_chat_through_the_server(make_rig: Make, llama_server: LocalServer,
                                   tmp_path: Path) -> None:
    rig = _connected(make_rig, _settings(tmp_path, llama_server.url))
    assert rig.service.model.state == "ready", rig.service.model.error
    info = rig.service.model.info
    assert info is not None and info.exact_counts
    assert info.extra["engine"] == "server"
    assert isinstance(rig.service.worker.backend, ServerBackend)
    assert rig.of(ModelChanged)[-1].info == info
    _send(rig, "What is the capital of France?")
    roles = _roles(rig)
    assert [r for r, _ in roles] == ["user", "assistant"]
    assert roles[1][1].strip()
    usage = rig.of(ContextUsage)[-1]
    backend = rig.service.worker.backend
    assert usage.window == rig.service.context_window_for(rig.service.settings)
    assert usage.prompt_tokens > 0
    assert backend is not None
    # The prompt the context bar showed is the server's own count of what was sent.
    saved = rig.service.store.list_chats()
    assert saved and saved[0].message_count == 2


def test_stop_keeps_the_partial_reply_and_closes_the_request(
    make_rig: Make, llama_server: LocalServer, tmp_path: Path
) -> None:
    rig = _connected(make_rig, _settings(tmp_path, llama_server.url, reply=300))
    before = _log_count(llama_server, "Disconnected from client")
    assert rig.service.submit("Tell me a long story about a dragon and a knight.")
    _wait(rig, lambda: len(rig.of(AssistantDelta)) >= 3)
    assert rig.service.stop()
    _settle(rig)
    turn = rig.of(TurnFinished)[-1]
    assert turn.stopped and not turn.error
    messages = rig.service.chat.conversation.messages
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[1].stopped
    assert messages[1].content and messages[1].content in "".join(
        d.text for d in rig.of(AssistantDelta)
    )
    _wait(rig, lambda: _log_count(llama_server, "Disconnected from client") > before)
    # The chat goes on.
    rig.service.settings.sampling.max_reply_tokens = 16
    _send(rig, "Thanks.")
    assert [m.role for m in rig.service.chat.conversation.messages][-1] == "assistant"


@pytest.fixture(scope="module")
def wide_server(embedded_model_path: Path, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[LocalServer]:
    """A second server with a 2,048-token window: the smallest where a compaction gives the
    model the room the summary grammar needs (at 1,024 the model is rightly not asked)."""
    log = tmp_path_factory.mktemp("wide-server") / "server.log"
    server = LocalServer(embedded_model_path, n_ctx=2048, threads=2, log_path=log)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_compact_is_written_by_the_server_model(
    make_rig: Make, wide_server: LocalServer, tmp_path: Path
) -> None:
    llama_server = wide_server
    # The server's real window is set, so the local policy keeps its recent share.
    settings = _settings(tmp_path, llama_server.url, window=llama_server.n_ctx)
    rig = _connected(make_rig, settings)
    garden = " ".join(f"Bed {i} holds {i + 2} tomato plants." for i in range(70))
    _send(rig, "My name is Ada and I keep bees in Lyon. Remember both. " + garden)
    _send(rig, "I also grow basil next to bed 3.")
    calls_before = _log_count(llama_server, '"POST /v1/chat/completions HTTP/1.1" 200')
    _send(rig, "/compact")
    finished = [e.event for e in rig.of(ContextChanged) if isinstance(e.event, CompactionFinished)]
    assert finished, [str(e.event)[:300] for e in rig.of(ContextChanged)]
    record = finished[-1].record
    assert record.reason == CompactionReason.MANUAL
    # The server's model was asked for the summary (and wrote it, unless it was rejected
    # and the extractive fallback took its place).
    assert record.summarizer == "model" or record.rejected
    assert _log_count(llama_server, '"POST /v1/chat/completions HTTP/1.1" 200') > calls_before
    assert "Ada" in record.summary
    assert rig.service.chat.conversation.compactions


def _started(rig: Rig) -> list[CompactionStarted]:
    return [e.event for e in rig.of(ContextChanged) if isinstance(e.event, CompactionStarted)]


def test_overflow_on_the_server_compacts_and_retries_once(
    make_rig: Make, llama_server: LocalServer, tmp_path: Path
) -> None:
    # The window set (4,096) is larger than the server's (1,024): the server refuses the
    # prompt with the second note, the engine learns its window, older turns are
    # summarized beside the note (kept whole: it is the latest message), the retry fits.
    rig = _connected(make_rig, _settings(tmp_path, llama_server.url, window=4096, reply=16))
    filler = " ".join(f"Line {i}: the orchard has {i} apple trees." for i in range(40))
    _send(rig, "Please remember this note. " + filler)
    second = "And this second note. " + filler
    _send(rig, second)
    assert not rig.notices("error")
    assert [s.reason for s in _started(rig)] == [CompactionReason.OVERFLOW]
    engine = rig.service.model.engine
    assert engine is not None
    kept = engine.controller.facts.of(rig.service.chat.conversation).kept
    assert any(m.role == "user" and m.content == second for m in kept)
    _send(rig, "What fruit grows in the orchard? Answer in one word.")
    # Now the note is history: at most one compaction more, at the threshold, no retry.
    later = [s.reason for s in _started(rig)][1:]
    assert later in ([], [CompactionReason.THRESHOLD])
    assert not rig.notices("error"), rig.notices()
    backend = rig.service.worker.backend
    assert backend is not None and backend.info.trained_context == llama_server.n_ctx
    messages = rig.service.chat.conversation.messages
    assert messages[-1].role == "assistant" and messages[-1].content.strip()
    assert rig.of(TurnFinished)[-1].error is None
    usage = rig.of(ContextUsage)[-1]
    assert usage.window == llama_server.n_ctx
    assert usage.prompt_tokens + usage.reserve <= llama_server.n_ctx


def test_a_server_that_goes_away_mid_reply_loses_nothing(
    make_rig: Make, embedded_model_path: Path, tmp_path: Path
) -> None:
    port = free_port()
    server = LocalServer(embedded_model_path, n_ctx=512, threads=1, port=port,
                         log_path=tmp_path / "server.log")
    server.start()
    try:
        rig = _connected(make_rig, _settings(tmp_path, server.url, reply=200))
        assert rig.service.model.state == "ready", rig.service.model.error
        assert rig.service.submit("Tell me a long story about a dragon.")
        _wait(rig, lambda: len(rig.of(AssistantDelta)) >= 2)
        server.kill()
        _settle(rig)
        errors = rig.notices("error")
        assert errors and server.url in errors[-1]
        assert rig.of(TurnFinished)[-1].error
        messages = rig.service.chat.conversation.messages
        assert messages[0].content == "Tell me a long story about a dragon."
        assert messages[-1].role == "assistant" and messages[-1].stopped  # what arrived
        # While it is down, what the user types is kept and the reason names the address.
        _send(rig, "Are you still there?")
        assert "Are you still there?" in [m.content for m in rig.service.chat.conversation.messages]
        assert "Cannot reach the server at " + server.url in rig.notices("error")[-1]
        assert not rig.service.jobs.busy
        # It comes back on the same address: the chat carries on without reconnecting.
        server = LocalServer(embedded_model_path, n_ctx=512, threads=1, port=port,
                             log_path=tmp_path / "server2.log")
        server.start()
        rig.service.settings.sampling.max_reply_tokens = 16
        _send(rig, "Say hello.")
        assert rig.service.chat.conversation.messages[-1].role == "assistant"
        assert rig.of(TurnFinished)[-1].error is None
        saved = rig.service.store.list_chats()
        assert saved[0].message_count == len(rig.service.chat.conversation.messages)
    finally:
        server.stop()


def test_no_server_at_the_address_fails_the_load_and_keeps_the_input(
    make_rig: Make, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    rig = _connected(make_rig, _settings(tmp_path, url))
    assert rig.service.model.state == "failed"
    assert url in rig.service.model.error
    assert "connection refused" in rig.service.model.error
    assert rig.of(ModelChanged)[-1].error == rig.service.model.error
    assert rig.service.submit("hello there")
    assert rig.service.queue == ["hello there"]
    assert not any(isinstance(e, Notice) and e.level == "error" for e in rig.events[-2:])
