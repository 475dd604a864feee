"""The bridge from the session service to Qt: every service event, posted from the worker
or the GUI thread, reaches its handler on the GUI thread, in the order the events happened.
Streamed text is batched into one :class:`AssistantDelta` about every 30 ms, so the reply
grows without a repaint per token.

The routes are keyed by the event types of the union itself (:data:`EVENT_TYPES`): a face
registers a handler per type with :meth:`ServiceBridge.on` (or says it does not show a type
with :meth:`ServiceBridge.ignore`), and an event of a type with no route raises
:class:`UnroutedEvent` instead of vanishing (a test checks that the window routes them all).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot

from assistant.service.events import ServiceEvent, StatusChanged
from assistant.service.values import AssistantDelta

FLUSH_MS = 30

#: Every event type the service posts, from the union itself.
EVENT_TYPES: tuple[type, ...] = get_args(ServiceEvent)

E = TypeVar("E")


class UnroutedEvent(LookupError):
    """An event reached the bridge for a type no handler was registered for."""


@dataclass(frozen=True)
class _Sealed:
    """Streamed text that came before the next event (dispatched in its place in line)."""

    text: str


def _ignore(_event: object) -> None:
    """The route of an event type a face does not show."""


class ServiceBridge(QObject):
    """Service events in, handler calls out (on the GUI thread): :meth:`on` routes one event
    type of :data:`EVENT_TYPES` to a handler; streamed text comes batched, as one
    :class:`AssistantDelta` per flush."""

    _event = Signal(object)
    _kick = Signal()
    _call = Signal(object)

    def __init__(self, parent: QObject | None = None, flush_ms: int = FLUSH_MS) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._pending: list[str] = []
        #: Statuses posted from the worker that lead the event that caused them (they are
        #: queued with it, so no frame shows one without the other).
        self._held: list[StatusChanged] = []
        self._routes: dict[type, list[Callable[[Any], object]]] = {}
        #: Events (and sealed text) queued for the GUI thread and not dispatched yet.
        self._in_flight = 0
        self._closed = False
        self._timer = QTimer(self, singleShot=True, interval=flush_ms)
        self._timer.timeout.connect(self.flush)
        self._event.connect(self._dispatch, Qt.ConnectionType.QueuedConnection)
        self._kick.connect(self._start_timer)
        self._call.connect(self._run_call)
        #: How many batched delta signals were emitted (tests check batching).
        self.flushes = 0

    # -- routes (GUI thread) -----------------------------------------------------------
    def on(self, event_type: type[E], handler: Callable[[E], object]) -> None:
        """Call ``handler`` with each event of ``event_type`` (after those added before)."""
        if event_type not in EVENT_TYPES:
            raise TypeError(f"{event_type.__name__} is not a service event")
        self._routes.setdefault(event_type, []).append(handler)

    def ignore(self, *event_types: type) -> None:
        """Route ``event_types`` nowhere, on purpose (a face that does not show them)."""
        for event_type in event_types:
            self.on(event_type, _ignore)

    def routed(self, event_type: type) -> bool:
        """Whether events of ``event_type`` have a route (a handler or :meth:`ignore`)."""
        return bool(self._routes.get(event_type))

    def deliver(self, event: ServiceEvent) -> None:
        """Hand ``event`` to its handlers now (GUI thread; :meth:`post` queues it)."""
        handlers = self._routes.get(type(event))
        if not handlers:
            raise UnroutedEvent(f"no route for {type(event).__name__}: register one with "
                                "ServiceBridge.on, or ServiceBridge.ignore")
        for handler in list(handlers):
            handler(event)

    # -- any thread --------------------------------------------------------------------
    def post(self, event: ServiceEvent) -> None:
        """Hand one event to the GUI thread (safe from any thread)."""
        if self._closed:
            return
        try:
            off_gui = QThread.currentThread() is not self.thread()
            if isinstance(event, StatusChanged) and event.leads and off_gui:
                with self._lock:
                    self._held.append(event)
                return
            if isinstance(event, AssistantDelta):
                with self._lock:
                    held = bool(self._held)
                    first = not self._pending
                    if not held:
                        self._pending.append(event.text)
                if held:
                    self._seal(_Sealed(event.text))  # the new status with the first words
                elif first:
                    self._kick.emit()
                return
            if self._deliver_now(event):
                return
            self._seal(event)
        except RuntimeError:  # the bridge was deleted while the worker still ran
            self._closed = True

    def _deliver_now(self, event: ServiceEvent) -> bool:
        """On the GUI thread with nothing queued: deliver the streamed text and ``event`` at
        once. Otherwise (``False``) they go behind the queued events, in order: a direct
        emission would overtake events the worker queued before."""
        if QThread.currentThread() is not self.thread():
            return False
        with self._lock:
            if self._in_flight:
                return False
            text = "".join(self._pending)
            self._pending.clear()
        if text:
            self.flushes += 1
            self.deliver(AssistantDelta(text))
        self.deliver(event)
        return True

    def call_in_gui(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the GUI thread, after every event posted before it."""
        if self._closed:
            return
        try:
            self._seal()
            self._call.emit(fn)
        except RuntimeError:
            self._closed = True

    def _seal(self, event: ServiceEvent | _Sealed | None = None) -> None:
        """Queue the text streamed so far, the held statuses and ``event`` as one step, ahead
        of what comes next (in order)."""
        with self._lock:
            text = "".join(self._pending)
            self._pending.clear()
            held, self._held = self._held, []
            step: list[ServiceEvent | _Sealed] = [_Sealed(text)] if text else []
            step += held
            if event is not None:
                step.append(event)
            if step:
                self._in_flight += 1
        if step:
            self._event.emit(tuple(step))

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
        """Deliver the streamed text collected so far as one :class:`AssistantDelta` (once
        every event posted before it has been shown)."""
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
            self.deliver(AssistantDelta(text))

    @Slot(object)
    def _run_call(self, fn: Callable[[], Any]) -> None:
        if not self._closed:
            fn()

    @Slot(object)
    def _dispatch(self, step: tuple[ServiceEvent | _Sealed, ...]) -> None:
        with self._lock:
            self._in_flight -= 1
        for event in step:
            if self._closed:
                return
            if isinstance(event, _Sealed):
                self.flushes += 1
                self.deliver(AssistantDelta(event.text))
            else:
                self.deliver(event)
