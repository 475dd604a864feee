"""The faces' read-only view of the service and its jobs that wait (issue 42): a token count
is made on the model's worker and never waited for by the caller, and Test connection
connects on a thread of its own and says why it could not."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from assistant.config import Settings
from assistant.llm.base import LLMError
from assistant.service.connection_test import ConnectionReport, ConnectionTest
from assistant.service.view import ServiceView, TokenCounter
from bench.local_server import free_port
from tests.fakes.scripted import ScriptedBackend

#: System prompts in these tests start so (the service counts other texts for itself).
MARK = "SYSTEM:"


class SlowCounter(ScriptedBackend):
    """Counts like the scripted model, but a count of a marked text waits for ``gate`` (a
    server's ``/tokenize`` on a slow link) and is recorded with the thread it ran on."""

    def __init__(self, fail: str = "") -> None:
        super().__init__()
        self.gate = threading.Event()
        self.counted: list[tuple[str, int]] = []
        self._fail = fail

    def count(self, text: str) -> int:
        if text.startswith(MARK):
            self.gate.wait(30)
            self.counted.append((text, threading.get_ident()))
            if text == self._fail:
                raise LLMError("the server refused the request")
        return super().count(text)


def test_a_count_runs_on_the_worker_and_the_caller_never_waits(
    make_rig: Callable[..., Any],
) -> None:
    backend = SlowCounter()
    rig = make_rig(backend=backend, threaded=True)
    calls: list[int] = []
    counter = TokenCounter(rig.service, lambda: calls.append(1), on_worker=True)
    try:
        # The worker is held on the first count, so an answer now cannot have waited for it.
        assert counter(MARK + " a") is None
        assert counter(MARK + " ab") is None
        assert counter(MARK + " abc") is None
        assert not backend.counted
    finally:
        backend.gate.set()
    rig.loop.run_until(lambda: bool(calls))
    # The one running and the one asked last are counted; typing in between is skipped.
    assert [text for text, _ in backend.counted] == [MARK + " a", MARK + " abc"]
    assert all(thread != rig.loop.owner for _, thread in backend.counted)
    assert counter(MARK + " abc") == ScriptedBackend().count(MARK + " abc")
    assert len(backend.counted) == 2  # answered from the last count, not counted again


def test_a_count_that_fails_skips_the_check_and_is_not_asked_again(
    make_rig: Callable[..., Any],
) -> None:
    text = MARK + " too long for the server"
    backend = SlowCounter(fail=text)
    backend.gate.set()
    rig = make_rig(backend=backend, threaded=True)
    calls: list[int] = []
    counter = TokenCounter(rig.service, lambda: calls.append(1), on_worker=True)
    assert counter(text) is None
    rig.loop.run_until(lambda: len(backend.counted) == 1)
    rig.loop.run_until(lambda: not counter._running)
    assert counter(text) is None
    assert len(backend.counted) == 1 and not calls


def test_the_embedded_models_tokenizer_counts_at_once_and_keeps_the_last_count(
    make_rig: Callable[..., Any],
) -> None:
    backend = SlowCounter()
    backend.gate.set()
    rig = make_rig(backend=backend, threaded=True)
    counter = ServiceView(rig.service).token_counter(lambda: None)
    assert counter is not None
    text = MARK + " be brief"
    assert counter(text) == ScriptedBackend().count(text)
    assert counter(text) == ScriptedBackend().count(text)
    assert len(backend.counted) == 1


def test_without_a_model_there_is_no_counter_and_the_settings_policy_is_shown(
    make_rig: Callable[..., Any],
) -> None:
    rig = make_rig(load=False)
    view = ServiceView(rig.service)
    assert view.token_counter(lambda: None) is None
    assert view.policy() == rig.service.settings.effective_policy(None)
    assert view.measured_context() is None
    assert view.server_report() == []


def test_a_connection_test_that_cannot_connect_says_where_from_its_own_thread() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    settings = Settings()
    settings.engine.server.base_url = url
    settings.engine.kind = "server"
    got: list[tuple[ConnectionReport | str, int]] = []
    done = threading.Event()

    def arrived(outcome: ConnectionReport | str) -> None:
        got.append((outcome, threading.get_ident()))
        done.set()

    test = ConnectionTest()
    assert test.start(settings, None, arrived)
    assert done.wait(60)
    test.wait()
    (outcome, thread), = got
    assert isinstance(outcome, str) and outcome.startswith(f"Cannot reach the server at {url}")
    assert thread != threading.get_ident()
    assert not test.running
