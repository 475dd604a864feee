"""The bridge from the agent's worker thread to the GUI thread.

The agent calls :meth:`AgentBridge.post` on the worker thread for every event. The bridge
re-emits each one as a typed Qt signal; the bridge lives in the GUI thread, so Qt queues
the emission and the slots run on the GUI thread, in the order the events happened.

Streamed text (:class:`AssistantDelta`) is batched: pieces are collected under a lock and
flushed as one :attr:`AgentBridge.assistant_delta` signal about every 30 ms, and always
before the next non-text event, so the reply grows smoothly without a repaint per token.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from assistant.agent.events import (
    AgentEvent,
    AssistantDelta,
    ContextChanged,
    ContextUsage,
    MessageAdded,
    ModelCallFinished,
    Notice,
    ToolCallStarted,
    TurnFinished,
)

FLUSH_MS = 30


class AgentBridge(QObject):
    """Agent events in, Qt signals out (on the GUI thread)."""

    message_added = Signal(object)  # Message
    assistant_delta = Signal(str)  # batched streamed text
    tool_call_started = Signal(object)  # ToolCallStarted
    notice = Signal(object)  # Notice
    context_usage = Signal(object)  # ContextUsage
    context_changed = Signal(object)  # a compaction.events.ContextEvent
    model_call_finished = Signal(object)  # ModelCallFinished
    turn_finished = Signal(object)  # TurnFinished

    _event = Signal(object)
    _kick = Signal()
    _call = Signal(object)

    def __init__(self, parent: QObject | None = None, flush_ms: int = FLUSH_MS) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._closed = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(flush_ms)
        self._timer.timeout.connect(self.flush)
        self._event.connect(self._dispatch)
        self._kick.connect(self._start_timer)
        self._call.connect(self._run_call)
        #: How many batched delta signals were emitted (tests check batching).
        self.flushes = 0

    # -- any thread --------------------------------------------------------------------
    def post(self, event: AgentEvent) -> None:
        """Hand one agent event to the GUI thread (safe from any thread)."""
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
            self._event.emit(event)
        except RuntimeError:  # the bridge was deleted while the worker still ran
            self._closed = True

    def call_in_gui(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the GUI thread, after every event posted before it."""
        if self._closed:
            return
        try:
            self._call.emit(fn)
        except RuntimeError:
            self._closed = True

    def close(self) -> None:
        """Drop everything posted from now on (the window is going away)."""
        self._closed = True
        self._timer.stop()

    # -- GUI thread --------------------------------------------------------------------
    @Slot()
    def _start_timer(self) -> None:
        if not self._timer.isActive():
            self._timer.start()

    @Slot()
    def flush(self) -> None:
        """Emit the streamed text collected so far as one signal."""
        with self._lock:
            text = "".join(self._pending)
            self._pending.clear()
        if text:
            self.flushes += 1
            self.assistant_delta.emit(text)

    @Slot(object)
    def _run_call(self, fn: Callable[[], Any]) -> None:
        self.flush()
        if not self._closed:
            fn()

    @Slot(object)
    def _dispatch(self, event: AgentEvent) -> None:
        self.flush()
        if self._closed:
            return
        if isinstance(event, MessageAdded):
            self.message_added.emit(event.message)
        elif isinstance(event, ToolCallStarted):
            self.tool_call_started.emit(event)
        elif isinstance(event, Notice):
            self.notice.emit(event)
        elif isinstance(event, ContextUsage):
            self.context_usage.emit(event)
        elif isinstance(event, ContextChanged):
            self.context_changed.emit(event.event)
        elif isinstance(event, ModelCallFinished):
            self.model_call_finished.emit(event)
        elif isinstance(event, TurnFinished):
            self.turn_finished.emit(event)
