"""One job at a time on the model worker, with its cancel token and its completion on the
owner thread; ``then(result)`` may chain a follow-up job without the runner looking idle."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from assistant.llm.base import CancelToken
from assistant.llm.worker import ModelWorker
from assistant.service.status import Status, StatusMachine
from assistant.sessions.errors import SessionError

Job = Callable[[CancelToken], Any]
#: Runs on the owner thread with the job's result; True when it started a follow-up job.
Then = Callable[[Any], bool]


@dataclass(eq=False)
class JobRunner:
    worker: ModelWorker
    dispatch: Callable[[Callable[[], None]], None]
    status: StatusMachine
    on_status: Callable[[Status | None], None]
    on_error: Callable[[str], None]
    on_idle: Callable[[], None]
    on_start: Callable[[], None] | None = None
    busy: bool = field(default=False, init=False)
    closed: bool = field(default=False, init=False)
    _cancel: CancelToken | None = field(default=None, init=False)

    def run(
        self, job: Job, then: Then | None = None, what: str = "", *, model_call: bool = False
    ) -> None:
        """Run ``job`` on the worker; ``then(result)`` runs on the owner thread after."""
        if self.on_start is not None:
            self.on_start()  # e.g. stop background work first: this job goes before it
        cancel = CancelToken()
        self._cancel = cancel
        self.busy = True
        self.on_status(self.status.job_started(what, model_call=model_call))
        future = self.worker.submit(job, cancel)
        future.add_done_callback(lambda f: self.dispatch(lambda: self._done(f, then)))

    def stop(self) -> bool:
        """Cancel the running job (it ends soon, keeping what it did so far)."""
        if self._cancel is not None and not self._cancel.cancelled:
            self.on_status(self.status.stopping())
            self._cancel.cancel()
            return True
        return False

    def _done(self, future: Future[Any], then: Then | None) -> None:
        if self.closed:
            return
        exc = future.exception()
        if exc is not None:
            self.on_error(f"Something went wrong: {exc}")
        elif then is not None:
            try:
                if then(future.result()):
                    return
            except (OSError, SessionError, ValueError, KeyError) as err:
                self.on_error(str(err))
        self._cancel = None
        self.busy = False
        self.on_status(self.status.job_finished())
        self.on_idle()
