"""The bridge from the session service to Qt: every service event, posted from the worker
or the GUI thread, becomes a typed signal on the GUI thread, in the order the events
happened. Streamed text is batched into one signal about every 30 ms, so the reply grows
without a repaint per token.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from assistant.agent.events import AssistantDelta
from assistant.service.events import ServiceEvent

FLUSH_MS = 30


@dataclass(frozen=True)
class _Sealed:
    """Streamed text that came before the next event (dispatched in its place in line)."""

    text: str


def signal_name(event_type: type) -> str:
    """The signal an event type is emitted by: its name in snake case."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event_type.__name__).lower()


class ServiceBridge(QObject):
    """Service events in, Qt signals out (on the GUI thread): each event is emitted by the
    signal named after its type (``MessageAdded`` by ``message_added``); the window connects
    to those it shows. Streamed text comes batched, by :attr:`assistant_delta`."""

    assistant_delta = Signal(str)
    message_added = Signal(object)
    tool_call_started = Signal(object)
    notice = Signal(object)
    context_usage = Signal(object)
    context_changed = Signal(object)
    turn_finished = Signal(object)
    status_changed = Signal(object)
    queue_changed = Signal(object)
    chats_changed = Signal(object)
    conversation_reset = Signal(object)
    model_changed = Signal(object)
    settings_changed = Signal(object)
    export_path_needed = Signal(object)
    chat_picker_requested = Signal(object)
    prefill_progress = Signal(object)
    reply_stats = Signal(object)
    model_switch_suggested = Signal(object)
    message_refused = Signal(object)

    _event = Signal(object)
    _kick = Signal()
    _call = Signal(object)

    def __init__(self, parent: QObject | None = None, flush_ms: int = FLUSH_MS) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._pending: list[str] = []
        #: Events (and sealed text) queued for the GUI thread and not dispatched yet.
        self._in_flight = 0
        self._closed = False
        self._timer = QTimer(self, singleShot=True, interval=flush_ms)
        self._timer.timeout.connect(self.flush)
        self._event.connect(self._dispatch)
        self._kick.connect(self._start_timer)
        self._call.connect(self._run_call)
        #: How many batched delta signals were emitted (tests check batching).
        self.flushes = 0

    # -- any thread --------------------------------------------------------------------
    def post(self, event: ServiceEvent) -> None:
        """Hand one event to the GUI thread (safe from any thread)."""
        if self._closed:
            return
        try:
            if isinstance(event, AssistantDelta):
                with self._lock:
                    first = not self._pending
                    self._pending.append(event.text)
                if first:
                    self._kick.emit()
                return
            self._seal()
            with self._lock:
                self._in_flight += 1
            self._event.emit(event)
        except RuntimeError:  # the bridge was deleted while the worker still ran
            self._closed = True

    def call_in_gui(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the GUI thread, after every event posted before it."""
        if self._closed:
            return
        try:
            self._seal()
            self._call.emit(fn)
        except RuntimeError:
            self._closed = True

    def _seal(self) -> None:
        """Queue the text streamed so far ahead of what comes next (in order)."""
        with self._lock:
            text = "".join(self._pending)
            self._pending.clear()
            if text:
                self._in_flight += 1
        if text:
            self._event.emit(_Sealed(text))

    def close(self) -> None:
        """Drop everything posted from now on."""
        self._closed = True
        self._timer.stop()

    # -- GUI thread --------------------------------------------------------------------
    @Slot()
    def _start_timer(self) -> None:
        if not self._timer.isActive():
            self._timer.start()

    @Slot()
    def flush(self) -> None:
        """Emit the streamed text collected so far as one signal (once every event posted
        before it has been shown)."""
        with self._lock:
            if self._in_flight:
                text = ""
            else:
                text = "".join(self._pending)
                self._pending.clear()
            waiting = bool(self._in_flight and self._pending)
        if waiting:
            self._timer.start()
        if text:
            self.flushes += 1
            self.assistant_delta.emit(text)

    @Slot(object)
    def _run_call(self, fn: Callable[[], Any]) -> None:
        if not self._closed:
            fn()

    @Slot(object)
    def _dispatch(self, event: ServiceEvent | _Sealed) -> None:
        with self._lock:
            self._in_flight -= 1
        if self._closed:
            return
        if isinstance(event, _Sealed):
            self.flushes += 1
            self.assistant_delta.emit(event.text)
            return
        # Events the window does not show have no signal (PromptProgress: the service
        # shows it as its PrefillProgress).
        signal = getattr(self, signal_name(type(event)), None)
        if signal is not None:
            signal.emit(event)
