"""One thread owns the model: :class:`ModelWorker` runs every job that touches the backend on
one thread and hands back a ``Future``, so the ``Llama`` object is never used from two threads
and the window never waits on it. With :class:`InlineExecutor` jobs run on the calling thread
(the terminal chat, unit tests).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from assistant.llm.base import LLMBackend

T = TypeVar("T")

BackendFactory = Callable[[str, int, int], LLMBackend]


def default_factory(model: str, n_ctx: int, threads: int) -> LLMBackend:
    from assistant.llm.llama_backend import LlamaBackend

    return LlamaBackend.load(model, n_ctx=n_ctx, threads=threads, calibrate=True)


class InlineExecutor(Executor):
    """Runs each job at once on the calling thread; returns its finished Future."""

    def __init__(self) -> None:
        self._shutdown = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if self._shutdown:
            raise RuntimeError("cannot schedule new jobs after shutdown")
        future: Future[T] = Future()
        future.set_running_or_notify_cancel()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # delivered through the future, like a thread pool
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shutdown = True


class ModelWorker:
    """A single-thread executor that owns the loaded backend."""

    def __init__(
        self, factory: BackendFactory = default_factory, executor: Executor | None = None
    ) -> None:
        self._factory = factory
        self._pool = executor or ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="model-worker"
        )
        self._backend: LLMBackend | None = None

    @property
    def backend(self) -> LLMBackend | None:
        """The loaded backend (use it only through :meth:`submit`)."""
        return self._backend

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        return self._pool.submit(fn, *args, **kwargs)

    def load(
        self,
        model: str | Path,
        *,
        n_ctx: int,
        threads: int = 0,
        on_progress: Callable[[float], None] | None = None,
        prepare: Callable[[LLMBackend], None] | None = None,
    ) -> Future[LLMBackend]:
        """Load ``model`` in place of the current backend; ``prepare`` runs on the new one
        before it is handed out (settings that change how prompts are counted)."""

        def build() -> LLMBackend:
            backend = self._factory(str(model), n_ctx, threads)
            if prepare is not None:
                prepare(backend)
            return backend

        return self.load_with(build, on_progress=on_progress)

    def load_with(
        self,
        build: Callable[[], LLMBackend],
        *,
        on_progress: Callable[[float], None] | None = None,
    ) -> Future[LLMBackend]:
        """``build()`` a backend in place of the current one (the server engine's way)."""

        def job() -> LLMBackend:
            if on_progress:
                on_progress(0.0)
            old, self._backend = self._backend, None
            if old is not None:
                old.close()
            backend = build()
            self._backend = backend
            if on_progress:
                on_progress(1.0)
            return backend

        return self._pool.submit(job)

    def shutdown(self, wait: bool = True) -> None:
        def close() -> None:
            if self._backend is not None:
                self._backend.close()
                self._backend = None

        with contextlib.suppress(RuntimeError):
            self._pool.submit(close)
        self._pool.shutdown(wait=wait, cancel_futures=False)
