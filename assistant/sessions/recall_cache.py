"""An open chat's recall index kept as a cache of its chat file (issue 47, docs/RECALL.md):
opened on first use, checked at every use (its file still the one opened, no damage found),
and rebuilt from the chat file in the background when found damaged, while the chat stays
open, so recall is back by the next question instead of after the chat is reopened."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from assistant.conversation import Message
from assistant.sessions.recall_index import IndexBusy, RecallIndex

log = logging.getLogger("assistant.sessions.recall")

#: How long a question waits for a rebuild under way (a chat of a few thousand messages is
#: indexed in well under this); past it, recall is skipped for that question.
REBUILD_WAIT_S = 1.0
#: How long closing the chat waits for a rebuild to end (it closes its index itself).
CLOSE_WAIT_S = 10.0


class RecallCache:
    """One chat's index; ``messages`` gives the chat's messages as its file holds them."""

    def __init__(self, path: Path | None, messages: Callable[[], Sequence[Message]]) -> None:
        self.path = path
        self._messages = messages
        self._lock = threading.Lock()
        self._index: RecallIndex | None = None
        self._worker: threading.Thread | None = None
        self._closed = False
        #: Rebuilds finished while the chat was open (each found damage).
        self.rebuilds = 0

    def get(self) -> RecallIndex | None:
        """The intact index, opened on first use; None when closed, or while a rebuild runs
        longer than :data:`REBUILD_WAIT_S`."""
        index = self._current()
        if index is not None and index.intact():
            return index
        # A rebuild runs, or intact() just found damage and started one: wait for it once.
        with self._lock:
            worker = self._worker
        if worker is not None:
            worker.join(REBUILD_WAIT_S)
        index = self._current()
        return index if index is not None and index.intact() else None

    def _current(self) -> RecallIndex | None:
        """The index as it is (opened now if it was not); None while closed, rebuilding, or
        locked by another process (not waited for: tried again at the next question)."""
        with self._lock:
            if self._closed or self._worker is not None:
                return None
            index = self._index
        return index if index is not None else self._first_open()

    def _first_open(self) -> RecallIndex | None:
        messages = self._messages()
        try:
            index = RecallIndex.open(self.path, messages, self.damaged)
        except IndexBusy as exc:
            log.info("Recall skipped: %s", exc)
            return None
        except (OSError, sqlite3.Error) as exc:
            log.warning("Recall index kept in memory (%s): %s", self.path, exc)
            index = RecallIndex.open(None, messages, self.damaged)
        with self._lock:
            if self._index is None and not self._closed:
                self._index = index
                return index
            current = self._index
        index.close()
        return current if current is not None else index

    def damaged(self, reason: str) -> None:
        """The index was found damaged (``reason``): rebuild it from the chat file on a
        thread of its own (once at a time)."""
        messages = list(self._messages())
        with self._lock:
            if self._closed or self._worker is not None:
                return
            worker = threading.Thread(
                target=self._rebuild, args=(messages, reason), name="recall-rebuild",
                daemon=True,
            )
            self._worker = worker
        log.warning("Recall index %s is rebuilt from the chat file: %s", self.path, reason)
        worker.start()

    def _rebuild(self, messages: Sequence[Message], reason: str) -> None:
        index: RecallIndex | None = None
        try:
            try:
                index = RecallIndex.rebuilt(self.path, messages, self.damaged, reason)
            except (OSError, sqlite3.Error) as exc:
                log.warning("Recall index kept in memory (%s): %s", self.path, exc)
                index = RecallIndex.rebuilt(None, messages, self.damaged, reason)
        except Exception:  # recall is an aid: the next damage found tries again
            log.warning("Recall index %s could not be rebuilt", self.path, exc_info=True)
        with self._lock:
            self._worker = None
            old, self._index = self._index, None  # failed: opened again at the next question
            if index is not None and not self._closed:
                self._index = index
                self.rebuilds += 1
                index = None
        if old is not None:
            old.close()
        if index is not None:  # the chat was closed meanwhile
            index.close()

    def close(self) -> None:
        """Close the index; a rebuild under way ends and closes its own."""
        with self._lock:
            self._closed = True
            index, self._index = self._index, None
            worker = self._worker
        if index is not None:
            index.close()
        if worker is not None:
            worker.join(CLOSE_WAIT_S)
