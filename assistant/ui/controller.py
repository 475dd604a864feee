"""The chat controller: the open chat, the loaded model, the running job and the queue.

It lives on the GUI thread and never waits on the model: every model job (a chat turn, a
tool command, /compact, an edit or a regeneration, loading a model) is submitted to the one
:class:`ModelWorker` thread, and its completion comes back through the bridge as a queued
call. Input that arrives while a job runs, while a compaction runs, or before the model has
loaded is queued and sent, in order, when the worker is free.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from PySide6.QtCore import QObject, Signal

from assistant.agent.commands import AppCommand, parse_input
from assistant.agent.loop import Agent
from assistant.compaction.events import (
    CompactionCancelled,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    ContextEvent,
)
from assistant.config import Settings, save_settings
from assistant.conversation import CompactionRecord, Conversation, Message
from assistant.engine import Engine, build_engine
from assistant.llm.base import CancelToken, LLMBackend, ModelInfo
from assistant.llm.registry import resolve_model
from assistant.llm.worker import ModelWorker
from assistant.sessions.entries import PruneEntry
from assistant.sessions.errors import SessionError
from assistant.sessions.handle import ChatHandle
from assistant.sessions.store import ChatSummary, SessionStore
from assistant.settings_check import check_against_model
from assistant.ui.approval import GuiApprover
from assistant.ui.bridge import AgentBridge

#: App commands the window handles without the model.
GUI_COMMANDS = ("help", "clear", "model", "mode", "resume", "export")


def respond(agent: Agent, conv: Conversation, cancel: CancelToken) -> None:
    """Run the model on the conversation as it stands (after an edit or regenerate)."""
    agent.respond(conv, cancel)


class ChatController(QObject):
    busy_changed = Signal(bool)
    compaction_changed = Signal(bool)
    queue_changed = Signal(int)
    chats_changed = Signal()
    #: The view must re-render from :attr:`conversation` (chat opened, branch, compaction).
    conversation_reset = Signal()
    #: ("loading" | "ready" | "failed", text)
    model_state_changed = Signal(str, str)
    load_progress = Signal(float)
    app_command = Signal(object)
    notice = Signal(str, str)  # level, text

    def __init__(
        self,
        settings: Settings,
        store: SessionStore,
        worker: ModelWorker,
        bridge: AgentBridge,
        approver: GuiApprover,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self.store = store
        self.worker = worker
        self.bridge = bridge
        self.approver = approver
        self.handle: ChatHandle | None = None
        self.engine: Engine | None = None
        self.model_info: ModelInfo | None = None
        self.model_state = "loading"
        self.model_error = ""
        self.queue: list[str] = []
        self.busy = False
        self.compacting = False
        self._cancel: CancelToken | None = None
        self._load_seq = 0
        self._closed = False
        bridge.context_changed.connect(self._on_context_event)

    # -- state -------------------------------------------------------------------------
    @property
    def conversation(self) -> Conversation:
        return self.handle.conversation if self.handle is not None else Conversation()

    @property
    def chat_id(self) -> str | None:
        return self.handle.chat_id if self.handle is not None else None

    @property
    def ready(self) -> bool:
        return self.engine is not None

    def chats(self) -> list[ChatSummary]:
        try:
            return self.store.list_chats()
        except (OSError, SessionError) as exc:
            self.notice.emit("error", f"Cannot list chats: {exc}")
            return []

    def prune_count(self) -> tuple[int, int]:
        """(prunes, tokens cleared) recorded in the open chat."""
        if self.handle is None:
            return 0, 0
        prunes = [e for e in self.handle.entries if isinstance(e, PruneEntry)]
        return len(prunes), sum(e.tokens_freed for e in prunes)

    def originals(self, record: CompactionRecord) -> list[Message]:
        if self.handle is None:
            return []
        try:
            return self.handle.compacted_originals(record.id)
        except (KeyError, SessionError):
            return []

    def branch_info(self, message_id: str) -> tuple[int, int]:
        if self.handle is None:
            return 1, 1
        info = self.handle.branch_info(message_id)
        return info.index, info.count

    # -- the model ---------------------------------------------------------------------
    def context_window_for(self, settings: Settings) -> int:
        """The n_ctx a model loaded with ``settings`` gets."""
        trained: int | None = None
        if self.model_info is not None and settings.model == self.settings.model:
            trained = self.model_info.trained_context
        else:
            with contextlib.suppress(OSError, ValueError, KeyError):
                _path, entry = resolve_model(settings.model)
                trained = entry.context_length if entry is not None else None
        return settings.effective_policy(trained).window

    def load_model(self) -> None:
        """Load (or reload) the model of the current settings in the background."""
        self._load_seq += 1
        seq = self._load_seq
        self.engine = None
        self.model_info = None
        self.model_state = "loading"
        self.model_error = ""
        self.model_state_changed.emit("loading", f"Loading {self.settings.model}…")
        n_ctx = self.context_window_for(self.settings)

        def progress(value: float) -> None:
            self.bridge.call_in_gui(lambda: self.load_progress.emit(value))

        future = self.worker.load(
            self.settings.model,
            n_ctx=n_ctx,
            threads=self.settings.sampling.threads,
            on_progress=progress,
        )
        future.add_done_callback(lambda f: self.bridge.call_in_gui(lambda: self._loaded(seq, f)))

    def _loaded(self, seq: int, future: Future[LLMBackend]) -> None:
        if seq != self._load_seq or self._closed:
            return
        exc = future.exception()
        if exc is not None:
            self.model_state = "failed"
            self.model_error = str(exc) or type(exc).__name__
            self.model_state_changed.emit("failed", self.model_error)
            return
        backend = future.result()
        self.engine = build_engine(backend, lambda: self.settings, self.approver, self.bridge.post)
        self.model_info = backend.info
        self.model_state = "ready"
        self.model_state_changed.emit("ready", backend.info.name)
        check = check_against_model(self.settings, backend.info.trained_context, backend.count)
        for problem in check.errors:  # settings from the file, now that the model is known
            self.notice.emit("error", f"{problem} Open Settings (Ctrl+,) to change it.")
        self._drain_queue()

    def apply_settings(self, new: Settings) -> bool:
        """Save new settings; reload the model when its file, threads or window changed.
        Returns whether a reload started."""
        old = self.settings
        reload = (
            new.model != old.model
            or new.sampling.threads != old.sampling.threads
            or self.context_window_for(new) != self.context_window_for(old)
            or self.model_state == "failed"
        )
        self.settings = new
        try:
            save_settings(new)
        except OSError as exc:
            self.notice.emit("error", f"Could not save the settings: {exc}")
        if reload:
            self.load_model()
        return reload

    # -- chats -------------------------------------------------------------------------
    def _close_handle(self) -> None:
        if self.handle is not None:
            with contextlib.suppress(OSError, SessionError):
                self.handle.close()
            self.handle = None

    def new_chat(self) -> bool:
        if self.busy:
            self.notice.emit("warning", "Stop the reply (Esc) before starting a new chat.")
            return False
        self._close_handle()
        self.conversation_reset.emit()
        self.chats_changed.emit()
        return True

    def open_chat(self, chat_id: str) -> bool:
        if chat_id == self.chat_id:
            return True
        if self.busy:
            self.notice.emit("warning", "Stop the reply (Esc) before switching chats.")
            return False
        self._close_handle()
        try:
            self.handle = self.store.open(chat_id)
        except (OSError, SessionError) as exc:
            self.conversation_reset.emit()
            self.notice.emit("error", str(exc))
            return False
        self.conversation_reset.emit()
        for warning in self.handle.warnings:
            self.notice.emit("warning", warning)
        self.chats_changed.emit()
        return True

    def repair_chat(self) -> str | None:
        """Write a repaired copy of the open read-only chat beside it and open the copy."""
        if self.handle is None or self.handle.read_only is None:
            return None
        original = self.handle.chat_id
        try:
            copy_id = self.store.repair(original)
        except (OSError, SessionError) as exc:
            self.notice.emit("error", f"Cannot repair the chat: {exc}")
            return None
        self._close_handle()
        if self.open_chat(copy_id):
            self.notice.emit(
                "info",
                f"Opened the repaired copy ({len(self.conversation.messages)} messages). The "
                f"original {original}.jsonl is kept as it was.",
            )
        return copy_id

    def ensure_chat(self) -> ChatHandle:
        if self.handle is None:
            self.handle = self.store.create()
            self.chats_changed.emit()
        return self.handle

    def rename_chat(self, chat_id: str, title: str) -> None:
        try:
            if self.handle is not None and chat_id == self.handle.chat_id:
                self.handle.rename(title)
            else:
                self.store.rename(chat_id, title)
        except (OSError, SessionError, ValueError) as exc:
            self.notice.emit("error", f"Cannot rename the chat: {exc}")
        self.chats_changed.emit()

    def delete_chat(self, chat_id: str) -> None:
        if chat_id == self.chat_id:
            if self.busy:
                self.notice.emit("warning", "Stop the reply (Esc) before deleting this chat.")
                return
            self._close_handle()
            self.conversation_reset.emit()
        try:
            self.store.delete(chat_id)
        except (OSError, SessionError) as exc:
            self.notice.emit("error", f"Cannot delete the chat: {exc}")
        self.chats_changed.emit()

    def undo_delete(self) -> str | None:
        try:
            chat_id = self.store.undo_delete()
        except (OSError, SessionError) as exc:
            self.notice.emit("error", f"Cannot restore the chat: {exc}")
            return None
        self.chats_changed.emit()
        return chat_id

    # -- sending -----------------------------------------------------------------------
    def submit(self, text: str) -> None:
        """What the user typed: an app command, a chat message or a tool command."""
        parsed = parse_input(text)
        if isinstance(parsed, AppCommand) and parsed.name in GUI_COMMANDS and not self.busy:
            self.app_command.emit(parsed)
            return
        if self.busy or not self.ready or self.queue:
            self.queue.append(text)
            self.queue_changed.emit(len(self.queue))
            return
        self._send(text)

    def _send(self, text: str) -> None:
        parsed = parse_input(text)
        if isinstance(parsed, AppCommand) and parsed.name in GUI_COMMANDS:
            self.app_command.emit(parsed)
            self._drain_queue()
            return
        engine = self.engine
        assert engine is not None
        try:
            conv = self.ensure_chat().conversation
        except (OSError, SessionError) as exc:
            self.notice.emit("error", f"Cannot create a chat: {exc}")
            return
        self._run(lambda cancel: engine.agent.handle_input(conv, text, cancel), self._command_done)

    def _command_done(self, result: Any) -> bool:
        if isinstance(result, AppCommand):
            self.app_command.emit(result)
        return False

    def _drain_queue(self) -> None:
        if self.busy or not self.ready or not self.queue or self._closed:
            return
        text = self.queue.pop(0)
        self.queue_changed.emit(len(self.queue))
        self._send(text)

    def clear_queue(self) -> list[str]:
        texts, self.queue = self.queue, []
        self.queue_changed.emit(0)
        return texts

    def stop(self) -> bool:
        """Stop the reply or cancel the compaction that is running (Esc)."""
        if self._cancel is not None and not self._cancel.cancelled:
            self._cancel.cancel()
            return True
        return False

    def compact(self, focus: str | None = None) -> None:
        self.submit("/compact" + (f" {focus}" if focus else ""))

    # -- branches ----------------------------------------------------------------------
    def edit_message(self, message_id: str, text: str) -> None:
        """Replace a user message with ``text`` on a new branch and answer it."""
        if not self._can_branch():
            return
        handle, engine = self.handle, self.engine
        assert handle is not None and engine is not None

        def then(_result: Any) -> bool:
            self.conversation_reset.emit()
            self._run(lambda c: respond(engine.agent, handle.conversation, c))
            return True

        self._run(lambda _c: handle.edit_user_message(message_id, text), then)

    def regenerate(self, message_id: str) -> None:
        """Write an assistant reply again (the old one stays as branch 1)."""
        if not self._can_branch():
            return
        handle, engine = self.handle, self.engine
        assert handle is not None and engine is not None

        def then(_result: Any) -> bool:
            self.conversation_reset.emit()
            self._run(lambda c: respond(engine.agent, handle.conversation, c))
            return True

        self._run(lambda _c: handle.regenerate_from(message_id), then)

    def switch_branch(self, message_id: str, step: int) -> None:
        if self.handle is None or self.busy:
            return
        handle = self.handle

        def then(_result: Any) -> bool:
            self.conversation_reset.emit()
            return False

        self._run(lambda _c: handle.switch_branch(message_id, step), then)

    def _can_branch(self) -> bool:
        if self.busy:
            self.notice.emit("warning", "Wait for the reply to finish (or press Esc).")
            return False
        if self.handle is None or self.engine is None:
            self.notice.emit("warning", "The model is not loaded yet.")
            return False
        return True

    # -- jobs --------------------------------------------------------------------------
    def _run(
        self,
        job: Callable[[CancelToken], Any],
        then: Callable[[Any], bool] | None = None,
    ) -> None:
        """Run ``job`` on the worker; ``then(result)`` runs on the GUI thread afterwards
        and returns True when it started a follow-up job."""
        cancel = CancelToken()
        self._cancel = cancel
        self._set_busy(True)
        future = self.worker.submit(job, cancel)
        future.add_done_callback(lambda f: self.bridge.call_in_gui(lambda: self._job_done(f, then)))

    def _job_done(self, future: Future[Any], then: Callable[[Any], bool] | None) -> None:
        if self._closed:
            return
        chained = False
        exc = future.exception()
        if exc is not None:
            self.notice.emit("error", f"Something went wrong: {exc}")
        elif then is not None:
            try:
                chained = then(future.result())
            except (OSError, SessionError, ValueError, KeyError) as err:
                self.notice.emit("error", str(err))
        if chained:
            return
        self._cancel = None
        self._set_busy(False)
        if self.compacting:
            self.compacting = False
            self.compaction_changed.emit(False)
        self.chats_changed.emit()
        self._drain_queue()

    def _set_busy(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            self.busy_changed.emit(busy)

    def _on_context_event(self, event: ContextEvent) -> None:
        if isinstance(event, CompactionStarted):
            self.compacting = True
            self.compaction_changed.emit(True)
        elif isinstance(event, CompactionFinished | CompactionFailed | CompactionCancelled):
            self.compacting = False
            self.compaction_changed.emit(False)

    # -- shutdown ----------------------------------------------------------------------
    def shutdown(self) -> None:
        """Deny pending approvals, stop the job, stop the worker, close the chat."""
        if self._closed:
            return
        self._closed = True
        self.approver.close()
        self.stop()
        self.bridge.close()
        self.worker.shutdown(wait=True)
        self._close_handle()
        with contextlib.suppress(OSError, SessionError):
            self.store.close_all()
