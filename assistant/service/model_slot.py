"""The session service's model: loading (on the worker; a load overtaken by a newer one is
ignored), loaded with its engine, or failed. With the server engine, loading is connecting."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from assistant.config import EngineSettings, Settings
from assistant.engine import Engine, engine_label, server_builder, uses_server
from assistant.llm.base import LLMBackend, ModelInfo
from assistant.llm.registry import registered_context
from assistant.llm.worker import ModelWorker
from assistant.service.events import ModelChanged, ServiceEvent, StatusChanged
from assistant.service.resume import engine_tuning
from assistant.service.status import Status, StatusMachine


@dataclass(eq=False)
class ModelSlot:
    worker: ModelWorker
    dispatch: Callable[[Callable[[], None]], None]
    status: StatusMachine
    emit: Callable[[ServiceEvent], None]
    build: Callable[[LLMBackend], Engine]
    on_ready: Callable[[], None]
    engine: Engine | None = field(default=None, init=False)
    info: ModelInfo | None = field(default=None, init=False)
    #: "loading" | "ready" | "failed"
    state: str = field(default="loading", init=False)
    error: str = field(default="", init=False)
    closed: bool = field(default=False, init=False)
    _seq: int = field(default=0, init=False)
    #: The engine settings the current model was loaded (or connected) with.
    _engine: EngineSettings | None = field(default=None, init=False)

    def window_for(self, settings: Settings, loaded_model: str) -> int:
        """The n_ctx a model loaded with ``settings`` gets (``loaded_model``: the one loaded
        now)."""
        trained: int | None = None
        same_engine = self._engine is not None and settings.engine == self._engine
        if uses_server(settings):  # the server's window, else the one set
            if self.info is not None and same_engine and self.info.trained_context:
                trained = self.info.trained_context
            else:
                trained = settings.engine.server.window or None
        elif self.info is not None and same_engine and settings.model == loaded_model:
            trained = self.info.trained_context
        else:
            trained = registered_context(settings.model)
        return settings.effective_policy(trained).window

    def needs_reload(self, old: Settings, new: Settings, *, reconnect: bool = False) -> bool:
        """Another engine, model file, thread count, window or prompt form, or a failed last load;
        for a server any change, or ``reconnect`` (a new API key)."""
        if self.state == "failed" or new.engine.kind != old.engine.kind:
            return True
        if uses_server(new):
            return reconnect or new.engine != old.engine
        return (
            new.model != old.model
            or new.sampling.threads != old.sampling.threads
            # a new prompt form: counts and the engine are made again with the backend
            or new.performance.prompt_form != old.performance.prompt_form
            or self.window_for(new, old.model) != self.window_for(old, old.model)
        )

    def load(self, settings: Settings) -> None:
        """Load (or reload) ``settings.model`` on the worker."""
        self._seq += 1
        seq = self._seq
        self.engine = None
        self.info = None
        self.state = "loading"
        self.error = ""
        name = engine_label(settings)
        self.emit(ModelChanged())
        self._status(self.status.loading(name))

        def progress(value: float) -> None:
            self.dispatch(lambda: self._progress(seq, name, value))

        build = server_builder(settings)
        if build is not None:  # an OpenAI-compatible server: connect on the worker
            future = self.worker.load_with(build, on_progress=progress)
        else:
            future = self.worker.load(
                settings.model,
                n_ctx=self.window_for(settings, settings.model),
                threads=settings.sampling.threads,
                on_progress=progress,
                prepare=lambda backend: _prompt_form(backend, settings),
            )
        self._engine = settings.engine.model_copy(deep=True)
        future.add_done_callback(lambda f: self.dispatch(lambda: self._loaded(seq, f)))

    def _status(self, changed: Status | None) -> None:
        if changed is not None:
            self.emit(StatusChanged(changed))

    def _progress(self, seq: int, name: str, value: float) -> None:
        if seq == self._seq and self.state == "loading" and 0.0 < value < 1.0:
            self._status(self.status.loading(name, value))

    def _loaded(self, seq: int, future: Future[LLMBackend]) -> None:
        if seq != self._seq or self.closed:
            return
        exc = future.exception()
        if exc is not None:
            self.state = "failed"
            self.error = str(exc) or type(exc).__name__
            self.emit(ModelChanged(error=self.error))
            self._status(self.status.load_failed(self.error))
            return
        backend = future.result()
        self.engine = self.build(backend)
        self.info = backend.info
        self.state = "ready"
        self.emit(ModelChanged(info=backend.info))
        self._status(self.status.loaded(backend.info.name))
        self.on_ready()


def _prompt_form(backend: LLMBackend, settings: Settings) -> None:
    """Set the prompt form on a just-loaded backend, before anything is counted."""
    use = getattr(backend, "use_prompt_form", None)
    if callable(use):
        use(engine_tuning(settings).prompt_form)
