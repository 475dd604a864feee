"""The faces' read-only view of a :class:`~assistant.service.service.ChatService`: the
policy in effect, the loaded model's measured size, the connected server's report, the
saved chats that contain some text; and token counts: a server's are requests (it counts
with ``/tokenize``), made as jobs on the model's worker so the GUI thread never waits for
one; the embedded model's tokenizer counts in the process, at once."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.config import EffectivePolicy
from assistant.llm.context_probe import measured_context
from assistant.llm.openai_backend import ServerBackend
from assistant.service.chats import ChatSearch
from assistant.sessions.errors import SessionError

if TYPE_CHECKING:
    from assistant.service.service import ChatService


class ServiceView:
    """What the window and the terminal show of ``service`` besides its events."""

    def __init__(self, service: ChatService) -> None:
        self._service = service
        self._search = ChatSearch()

    def policy(self) -> EffectivePolicy:
        """The policy in effect: the engine's (the measured target beside the window, the
        hard limit), else the settings' for the model's trained length."""
        c = self._service
        if c.model.engine is not None:
            return c.model.engine.controller.policy()
        trained = c.model.info.trained_context if c.model.info is not None else None
        return c.settings.effective_policy(trained)

    def measured_context(self) -> int | None:
        """How many tokens the loaded model was measured to use well (None: not measured,
        or no model)."""
        engine = self._service.model.engine
        return measured_context(engine.backend.info) if engine is not None else None

    def server_report(self) -> list[str]:
        """The connected server's report (what it is, its window, how prompts are counted),
        one line each; none with the embedded model."""
        backend = self._service.worker.backend
        return backend.report().lines() if isinstance(backend, ServerBackend) else []

    def search_chats(self, text: str, chat_ids: Sequence[str]) -> dict[str, str]:
        """Of ``chat_ids``, the chats with a message containing ``text``: id -> a snippet
        (each chat's texts are kept until its file changes)."""
        paths: dict[str, Path] = {}
        for chat_id in chat_ids:
            with contextlib.suppress(SessionError):
                paths[chat_id] = self._service.store.path_of(chat_id)
        return self._search.search(paths, text)

    def token_counter(self, counted: Callable[[], None]) -> TokenCounter | None:
        """A counter of text with the loaded model's tokenizer (None: no model loaded)."""
        engine = self._service.model.engine
        if engine is None:
            return None
        return TokenCounter(self._service, counted,
                            on_worker=isinstance(engine.backend, ServerBackend))


class TokenCounter:
    """``counter(text)``: the count of ``text``; the last one is kept (a dialog asks on
    every key press). With ``on_worker`` it never waits: a text not counted yet is None
    while a job on the model's worker counts it, and ``counted()`` runs on the owner thread
    when the count is in; one count runs at a time, and only the text asked last is counted
    next. A count that fails is not asked again for the same text (the check it serves is
    skipped)."""

    def __init__(self, service: ChatService, counted: Callable[[], None], *,
                 on_worker: bool = True) -> None:
        self._service = service
        self._counted = counted
        self._on_worker = on_worker
        self._last: tuple[str, int] | None = None
        self._failed: str | None = None
        self._wanted: str | None = None
        self._running = False

    def __call__(self, text: str) -> int | None:
        if self._last is not None and self._last[0] == text:
            return self._last[1]
        engine = self._service.model.engine
        if not self._on_worker and engine is not None:
            self._last = (text, engine.backend.count(text))
            return self._last[1]
        if text != self._failed:
            self._wanted = text
            if not self._running:
                self._start(text)
        return None

    def _start(self, text: str) -> None:
        engine = self._service.model.engine
        if engine is None or self._service.jobs.closed:
            return
        self._running = True
        future = self._service.worker.submit(engine.backend.count, text)
        future.add_done_callback(
            lambda f: self._service.dispatch(lambda: self._done(text, f)))

    def _done(self, text: str, future: Future[int]) -> None:
        self._running = False
        if self._service.jobs.closed:
            return
        if future.exception() is None:
            self._last = (text, future.result())
        else:
            self._failed = text
        if self._wanted is not None and self._wanted != text:
            self._start(self._wanted)
        elif future.exception() is None:
            self._counted()
