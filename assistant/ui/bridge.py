"""The bridge from the session service to Qt: every service event, posted from the worker
or the GUI thread, becomes a typed signal on the GUI thread, in the order the events
happened. Streamed text is batched into one signal about every 30 ms, so the reply grows
without a repaint per token.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from assistant.agent.events import (
    AssistantDelta,
    ContextChanged,
    ContextUsage,
    MessageAdded,
    MessageRefused,
    ModelCallFinished,
    Notice,
    ToolCallStarted,
    TurnFinished,
)
from assistant.service.events import (
    ChatPickerRequested,
    ChatsChanged,
    ConversationReset,
    ExportPathNeeded,
    ModelChanged,
    ModelSwitchSuggested,
    PrefillProgress,
    QueueChanged,
    ReplyStats,
    ServiceEvent,
    SettingsChanged,
    StatusChanged,
)

FLUSH_MS = 30


@dataclass(frozen=True)
class _Sealed:
    """Streamed text that came before the next event (dispatched in its place in line)."""

    text: str


class ServiceBridge(QObject):
    """Service events in, Qt signals out (on the GUI thread)."""

    message_added = Signal(object)  # Message
    assistant_delta = Signal(str)  # batched streamed text
    tool_call_started = Signal(object)  # ToolCallStarted
    notice = Signal(object)  # Notice
    context_usage = Signal(object)  # ContextUsage
    context_changed = Signal(object)  # a compaction.events.ContextEvent
    model_call_finished = Signal(object)  # ModelCallFinished
    turn_finished = Signal(object)  # TurnFinished
    status_changed = Signal(object)  # service.status.Status
    queue_changed = Signal(object)  # tuple[str, ...]
    chats_changed = Signal()
    conversation_reset = Signal(object)  # chat id or None
    model_changed = Signal(object)  # ModelChanged
    settings_changed = Signal(object)  # SettingsChanged
    export_path_needed = Signal(object)  # Path (suggested)
    chat_picker_requested = Signal(object)  # tuple[ChatSummary, ...]
    prefill_progress = Signal(object)  # PrefillProgress
    reply_stats = Signal(object)  # ReplyStats
    model_switch_suggested = Signal(object)  # ModelSwitchSuggested
    message_refused = Signal(object)  # MessageRefused

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
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(flush_ms)
        self._timer.timeout.connect(self.flush)
        self._event.connect(self._dispatch)
        self._kick.connect(self._start_timer)
        self._call.connect(self._run_call)
        #: How many batched delta signals were emitted (tests check batching).
        self.flushes = 0
        #: Event type -> (signal, the signal's arguments from the event).
        self._routes: tuple[tuple[type[Any], Any, Callable[[Any], tuple[Any, ...]]], ...] = (
            (MessageAdded, self.message_added, lambda e: (e.message,)),
            (ToolCallStarted, self.tool_call_started, lambda e: (e,)),
            (Notice, self.notice, lambda e: (e,)),
            (ContextUsage, self.context_usage, lambda e: (e,)),
            (ContextChanged, self.context_changed, lambda e: (e.event,)),
            (ModelCallFinished, self.model_call_finished, lambda e: (e,)),
            (TurnFinished, self.turn_finished, lambda e: (e,)),
            (StatusChanged, self.status_changed, lambda e: (e.status,)),
            (QueueChanged, self.queue_changed, lambda e: (e.texts,)),
            (ChatsChanged, self.chats_changed, lambda e: ()),
            (ConversationReset, self.conversation_reset, lambda e: (e.chat_id,)),
            (ModelChanged, self.model_changed, lambda e: (e,)),
            (SettingsChanged, self.settings_changed, lambda e: (e,)),
            (ExportPathNeeded, self.export_path_needed, lambda e: (e.suggested,)),
            (ChatPickerRequested, self.chat_picker_requested, lambda e: (e.chats,)),
            (PrefillProgress, self.prefill_progress, lambda e: (e,)),
            (ReplyStats, self.reply_stats, lambda e: (e,)),
            (ModelSwitchSuggested, self.model_switch_suggested, lambda e: (e,)),
            (MessageRefused, self.message_refused, lambda e: (e,)),
        )

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
        for kind, signal, args in self._routes:
            if isinstance(event, kind):
                signal.emit(*args(event))
                return
        # (PromptProgress is not routed: the service shows it as its PrefillProgress.)
