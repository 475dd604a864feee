"""Settings → Engine's **Test connection**: connect to a server as the app would, on a
thread of its own (it waits on the network, never on the GUI thread), and hand the outcome
to the face: a :class:`ConnectionReport`, or a message saying why it failed."""

from __future__ import annotations

import threading
from collections.abc import Callable

from assistant.config import Settings
from assistant.engine import server_config
from assistant.llm.base import LLMError
from assistant.llm.openai_backend import ConnectionReport, ServerBackend

__all__ = ["ConnectionReport", "ConnectionTest"]

#: What a test gives the face: the server's report, or why it could not connect.
Outcome = ConnectionReport | str


class ConnectionTest:
    """One test at a time; ``done(outcome)`` is called on the test's thread (a face hands it
    to its own thread, e.g. with a queued signal)."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, settings: Settings, api_key: str | None,
              done: Callable[[Outcome], None]) -> bool:
        """Connect to ``settings.engine.server`` with ``api_key``; False while one runs."""
        if self.running:
            return False
        config = server_config(settings, api_key)

        def run() -> None:
            outcome: Outcome
            try:
                backend = ServerBackend.connect(config)
            except LLMError as exc:
                outcome = str(exc)
            except Exception as exc:  # anything else must still reach the face
                outcome = f"The connection test failed: {type(exc).__name__}: {exc}"
            else:
                try:
                    outcome = backend.report()
                finally:
                    backend.close()
            done(outcome)

        self._thread = threading.Thread(target=run, name="engine-test", daemon=True)
        self._thread.start()
        return True

    def wait(self, timeout: float = 60.0) -> None:
        """Wait at most ``timeout`` seconds for the test under way to end."""
        if self._thread is not None:
            self._thread.join(timeout)
