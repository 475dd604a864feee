"""The session service without Qt: a scripted backend, the real store, and either an
inline worker (jobs run at once) or the real worker thread with an owner loop that runs
the service's completions on the test's thread, as the window's event loop would."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from assistant.config import Settings
from assistant.llm.base import LLMBackend
from assistant.llm.worker import InlineExecutor, ModelWorker
from assistant.service.events import ServiceEvent, StatusChanged
from assistant.service.service import ChatService
from assistant.service.status import Status
from assistant.sessions.store import SessionStore
from tests.fakes.scripted import ScriptedBackend

E = TypeVar("E")
Factory = Callable[[str, int, int], LLMBackend]


class OwnerLoop:
    """The owner thread's queue: ``dispatch`` puts, :meth:`run_until` runs them here."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()
        self.owner = threading.get_ident()

    def dispatch(self, fn: Callable[[], None]) -> None:
        self._queue.put(fn)

    def run_until(self, done: Callable[[], bool], timeout: float = 20.0) -> None:
        deadline = threading.Event()
        timer = threading.Timer(timeout, deadline.set)
        timer.start()
        try:
            while not done():
                if deadline.is_set():
                    raise TimeoutError("the service did not get there in time")
                try:
                    fn = self._queue.get(timeout=0.05)
                except queue.Empty:
                    continue
                assert threading.get_ident() == self.owner
                fn()
        finally:
            timer.cancel()


@dataclass
class Rig:
    service: ChatService
    backend: ScriptedBackend
    events: list[ServiceEvent] = field(default_factory=list)
    loop: OwnerLoop | None = None
    loads: list[str] = field(default_factory=list)

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    def statuses(self) -> list[Status]:
        return [e.status for e in self.of(StatusChanged)]

    def notices(self, level: str | None = None) -> list[str]:
        from assistant.agent.events import Notice

        return [n.text for n in self.of(Notice) if level is None or n.level == level]

    def idle(self) -> None:
        """Wait (threaded rigs) until nothing runs and nothing is queued."""
        if self.loop is not None:
            self.loop.run_until(
                lambda: self.service.model.state != "loading"
                and not self.service.jobs.busy
                and not self.service.queue
            )


@pytest.fixture
def make_rig(tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    built: list[Rig] = []

    def make(
        *replies: Any,
        backend: ScriptedBackend | None = None,
        settings: Settings | None = None,
        factory: Factory | None = None,
        threaded: bool = False,
        load: bool = True,
        store: SessionStore | None = None,
    ) -> Rig:
        be = backend or ScriptedBackend(list(replies))
        loads: list[str] = []

        def default(model: str, _n_ctx: int, _threads: int) -> LLMBackend:
            loads.append(model)
            return be

        loop = OwnerLoop() if threaded else None
        events: list[ServiceEvent] = []
        worker = ModelWorker(factory or default, None if threaded else InlineExecutor())
        service = ChatService(
            settings or Settings(workspace=str(tmp_path / "workspace")),
            store or SessionStore(),
            worker,
            None,
            events.append,
            **({"dispatch": loop.dispatch} if loop is not None else {}),
            extra_help="Shortcuts: none here.",
        )
        rig = Rig(service, be, events, loop, loads)
        built.append(rig)
        if load:
            service.load_model()
            rig.idle()
        return rig

    yield make
    for rig in built:
        rig.service.shutdown()
