"""The chat session service: one chat's lifecycle, the input queue, commands, the model's
lifecycle and saving. Qt-free; the window and the terminal chat are two faces of it.

:class:`ChatService` lives on one *owner* thread (the GUI thread, or the terminal's main
thread) and never waits on the model: every model job (a chat turn, a tool command,
``/compact``, an edit or a regeneration, loading a model) goes to the one
:class:`~assistant.llm.worker.ModelWorker`, and its completion comes back through
``dispatch`` (which runs a function on the owner thread, after everything posted before
it). Input that arrives while a job runs, or before the model has loaded, is parsed once and
queued, then sent in order when the worker is free.

Everything the service does is reported through one ``on_event`` callback as a
:data:`~assistant.service.events.ServiceEvent`, including a :class:`~.status.Status` for
the status bar from the one :class:`~.status.StatusMachine`. Chats are saved through the
:class:`~assistant.sessions.store.SessionStore` (a chat file is created with the first
message; every change is on disk before it is shown).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.agent.commands import (
    AppCommand,
    ChatInput,
    CommandError,
    ParsedInput,
    ToolCommand,
    parse_input,
)
from assistant.agent.events import AgentEvent, Notice
from assistant.config import Settings, save_settings
from assistant.conversation import CompactionRecord, Conversation, Message
from assistant.engine import Engine, build_engine
from assistant.llm.base import CancelToken, LLMBackend, ModelInfo
from assistant.llm.registry import resolve_model
from assistant.llm.worker import ModelWorker
from assistant.service import chats
from assistant.service.commands import AppCommands
from assistant.service.events import (
    ChatsChanged,
    ConversationReset,
    ModelChanged,
    QueueChanged,
    ServiceEvent,
    SettingsChanged,
    StatusChanged,
)
from assistant.service.status import Phase, Status, StatusMachine
from assistant.sessions.entries import PruneEntry
from assistant.sessions.errors import SessionError
from assistant.sessions.handle import ChatHandle
from assistant.sessions.store import ChatSummary, SessionStore
from assistant.settings_check import check_against_model
from assistant.tools.approval import Approver

Dispatch = Callable[[Callable[[], None]], None]
Job = Callable[[CancelToken], Any]
#: Runs on the owner thread with the job's result; True when it started a follow-up job.
Then = Callable[[Any], bool]


def call_now(fn: Callable[[], None]) -> None:
    """``dispatch`` for a service whose worker runs jobs inline (the terminal chat)."""
    fn()


@dataclass(frozen=True)
class Queued:
    """Input waiting to be sent: what was typed and what it was parsed into (once)."""

    text: str
    parsed: ParsedInput


class ChatService:
    def __init__(
        self,
        settings: Settings,
        store: SessionStore,
        worker: ModelWorker,
        approver: Approver | None,
        on_event: Callable[[ServiceEvent], None],
        *,
        dispatch: Dispatch = call_now,
        persist_settings: Callable[[Settings], None] | None = save_settings,
        extra_help: str = "",
    ) -> None:
        self.settings = settings
        self.store = store
        self.worker = worker
        self.approver = approver
        self.on_event = on_event
        self.dispatch = dispatch
        self.persist_settings = persist_settings
        self.handle: ChatHandle | None = None
        self.engine: Engine | None = None
        self.model_info: ModelInfo | None = None
        #: "loading" | "ready" | "failed"
        self.model_state = "loading"
        self.model_error = ""
        self.status_machine = StatusMachine()
        self.commands = AppCommands(self, extra_help)
        self._queue: list[Queued] = []
        self._busy = False
        self._cancel: CancelToken | None = None
        self._load_seq = 0
        self._closed = False

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

    @property
    def busy(self) -> bool:
        return self._busy

    @property
    def compacting(self) -> bool:
        return self.status.phase is Phase.COMPACTING

    @property
    def queue(self) -> list[str]:
        """What is waiting to be sent, as typed."""
        return [q.text for q in self._queue]

    @property
    def status(self) -> Status:
        return self.status_machine.status

    def chats(self) -> list[ChatSummary]:
        try:
            return self.store.list_chats()
        except (OSError, SessionError) as exc:
            self.notice("error", f"Cannot list chats: {exc}")
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

    # -- events ------------------------------------------------------------------------
    def emit(self, event: ServiceEvent) -> None:
        if not self._closed:
            self.on_event(event)

    def notice(self, level: str, text: str) -> None:
        assert level in ("info", "warning", "error")
        self.emit(Notice(level, text))  # type: ignore[arg-type]

    def _status(self, changed: Status | None) -> None:
        if changed is not None:
            self.emit(StatusChanged(changed))

    def _agent_event(self, event: AgentEvent) -> None:
        """From the worker thread: pass the agent's event on, then the status it causes."""
        changed = self.status_machine.on_agent_event(event)
        self.emit(event)
        self._status(changed)

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
        """Load (or reload) the model of the current settings on the worker."""
        self._load_seq += 1
        seq = self._load_seq
        self.engine = None
        self.model_info = None
        self.model_state = "loading"
        self.model_error = ""
        name = self.settings.model
        self.emit(ModelChanged())
        self._status(self.status_machine.loading(name))

        def progress(value: float) -> None:
            self.dispatch(lambda: self._load_progress(seq, name, value))

        future = self.worker.load(
            name,
            n_ctx=self.context_window_for(self.settings),
            threads=self.settings.sampling.threads,
            on_progress=progress,
        )
        future.add_done_callback(lambda f: self.dispatch(lambda: self._loaded(seq, f)))

    def _load_progress(self, seq: int, name: str, value: float) -> None:
        if seq == self._load_seq and self.model_state == "loading" and 0.0 < value < 1.0:
            self._status(self.status_machine.loading(name, value))

    def _loaded(self, seq: int, future: Future[LLMBackend]) -> None:
        if seq != self._load_seq or self._closed:
            return
        exc = future.exception()
        if exc is not None:
            self.model_state = "failed"
            self.model_error = str(exc) or type(exc).__name__
            self.emit(ModelChanged(error=self.model_error))
            self._status(self.status_machine.load_failed(self.model_error))
            return
        backend = future.result()
        self.engine = build_engine(
            backend, lambda: self.settings, self.approver, self._agent_event
        )
        self.model_info = backend.info
        self.model_state = "ready"
        self.emit(ModelChanged(info=backend.info))
        self._status(self.status_machine.loaded(backend.info.name))
        check = check_against_model(self.settings, backend.info.trained_context, backend.count)
        for problem in check.errors:  # settings from the file, now that the model is known
            self.notice("error", f"{problem} Change it in Settings (Ctrl+,).")
        self._drain_queue()

    def apply_settings(self, new: Settings) -> bool:
        """Use (and save) new settings; reload the model when its file, threads or window
        changed, or the last load failed. Returns whether a reload started."""
        old = self.settings
        reload = (
            new.model != old.model
            or new.sampling.threads != old.sampling.threads
            or self.context_window_for(new) != self.context_window_for(old)
            or self.model_state == "failed"
        )
        self.settings = new
        if self.persist_settings is not None:
            try:
                self.persist_settings(new)
            except OSError as exc:
                self.notice("error", f"Could not save the settings: {exc}")
        self.emit(SettingsChanged(new, reload))
        if reload:
            self.load_model()
        else:
            self._status(self.status_machine.note("Settings saved"))
        return reload

    # -- chats -------------------------------------------------------------------------
    def _close_handle(self) -> None:
        if self.handle is not None:
            with contextlib.suppress(OSError, SessionError):
                self.handle.close()
            self.handle = None

    def _refuse_while_busy(self, doing: str) -> bool:
        if self._busy:
            self.notice("warning", f"Stop the reply (Esc) before {doing}.")
            return True
        return False

    def new_chat(self) -> bool:
        """Start a new chat (its file is created with the first message)."""
        if self._refuse_while_busy("starting a new chat"):
            return False
        self._close_handle()  # a new conversation: "allow for this chat" answers reset
        self.emit(ConversationReset(None))
        self.emit(ChatsChanged())
        self._status(self.status_machine.note("New chat"))
        return True

    def open_chat(self, chat_id: str) -> bool:
        """Open a saved chat (takes its lock: another window or terminal cannot write it)."""
        if chat_id == self.chat_id:
            return True
        if self._refuse_while_busy("switching chats"):
            return False
        self._close_handle()
        try:
            self.handle = self.store.open(chat_id)
        except (OSError, SessionError) as exc:
            self.emit(ConversationReset(None))
            self.notice("error", str(exc))
            return False
        self.emit(ConversationReset(chat_id))
        for warning in self.handle.warnings:
            self.notice("warning", warning)
        self.emit(ChatsChanged())
        return True

    def resume(self, ref: str) -> bool:
        """Open the chat ``ref`` names: an id, ``last``, or part of a title."""
        found = chats.find_chat(self.chats(), ref)
        if found is None:
            self.notice("error", f"No chat matches “{ref}”.")
            return False
        return self.open_chat(found.id)

    def repair_chat(self) -> str | None:
        """Write a repaired copy of the open read-only chat (damaged lines) beside it and
        open the copy; the original file is kept as it was."""
        if self.handle is None or self.handle.read_only is None:
            return None
        original = self.handle.chat_id
        try:
            copy_id = self.store.repair(original)
        except (OSError, SessionError) as exc:
            self.notice("error", f"Cannot repair the chat: {exc}")
            return None
        self._close_handle()
        if self.open_chat(copy_id):
            self.notice(
                "info",
                f"Opened the repaired copy ({len(self.conversation.messages)} messages). The "
                f"original {original}.jsonl is kept as it was.",
            )
        return copy_id

    def ensure_chat(self) -> ChatHandle:
        if self.handle is None:
            self.handle = self.store.create()
            self.emit(ChatsChanged())
        return self.handle

    def rename_chat(self, chat_id: str, title: str) -> None:
        try:
            if self.handle is not None and chat_id == self.handle.chat_id:
                self.handle.rename(title)
            else:
                self.store.rename(chat_id, title)
        except (OSError, SessionError, ValueError) as exc:
            self.notice("error", f"Cannot rename the chat: {exc}")
        self.emit(ChatsChanged())

    def delete_chat(self, chat_id: str) -> None:
        """Move a chat to the trash (:meth:`undo_delete` brings it back)."""
        if chat_id == self.chat_id:
            if self._refuse_while_busy("deleting this chat"):
                return
            self._close_handle()
            self.emit(ConversationReset(None))
        try:
            self.store.delete(chat_id)
        except (OSError, SessionError) as exc:
            self.notice("error", f"Cannot delete the chat: {exc}")
        self.emit(ChatsChanged())

    def undo_delete(self) -> str | None:
        try:
            chat_id = self.store.undo_delete()
        except (OSError, SessionError) as exc:
            self.notice("error", f"Cannot restore the chat: {exc}")
            return None
        self.emit(ChatsChanged())
        if chat_id is not None:
            self._status(self.status_machine.note("Chat restored"))
        return chat_id

    def export_chat(self, target: Path) -> Path | None:
        """Write the open chat to ``target`` (``.json``: OpenAI format, else Markdown)."""
        if self.chat_id is None:
            self.notice("error", "Nothing to export yet: this chat is empty.")
            return None
        try:
            path = chats.export_chat(self.store, self.chat_id, target)
        except (OSError, SessionError) as exc:
            self.notice("error", f"Export failed: {exc}")
            return None
        self.notice("info", f"Exported this chat to {path}")
        return path

    # -- sending -----------------------------------------------------------------------
    def submit(self, text: str) -> bool:
        """What the user typed, parsed once: an app command runs now (or after the running
        job), a message or tool command is sent or queued. False: it was refused (a notice
        says why) and the face should give the text back to the user."""
        parsed = parse_input(text)
        if isinstance(parsed, CommandError):
            self.notice("error", parsed.message)
            return False
        read_only = self.handle.read_only if self.handle is not None else None
        if read_only is not None and not isinstance(parsed, AppCommand):
            self.notice("warning", f"Not sent: {read_only}")  # damaged lines; see repair_chat
            return False
        item = Queued(text, parsed)
        if isinstance(parsed, AppCommand) and parsed.name != "compact" and not self._busy:
            self.commands.run(parsed)
            return True
        if self._busy or not self.ready or self._queue:
            self._queue.append(item)
            self.emit(QueueChanged(tuple(self.queue)))
            return True
        self._send(item)
        return True

    def compact(self, focus: str | None = None) -> None:
        """Summarize older messages now (queued like typed input while a job runs)."""
        self._queue_or_send(Queued("/compact" + (f" {focus}" if focus else ""),
                                   AppCommand("compact", focus or "")))

    def drop_file(self, path: Path) -> None:
        """A file dropped on the window: read it into the chat (see ``Agent.drop_file``)."""
        engine = self.engine
        if engine is None or self._busy:
            self.notice("warning", "Drop the file again when the model is ready.")
            return
        conv = self._chat_for_input()
        if conv is not None:
            self._run(lambda c: engine.agent.drop_file(conv, path, c), what="Reading the file")

    def _queue_or_send(self, item: Queued) -> None:
        if self._busy or not self.ready or self._queue:
            self._queue.append(item)
            self.emit(QueueChanged(tuple(self.queue)))
        else:
            self._send(item)

    def _chat_for_input(self) -> Conversation | None:
        try:
            return self.ensure_chat().conversation
        except (OSError, SessionError) as exc:
            self.notice("error", f"Cannot create a chat: {exc}")
            return None

    def _send(self, item: Queued) -> None:
        parsed = item.parsed
        if isinstance(parsed, AppCommand) and parsed.name != "compact":
            self.commands.run(parsed)
            self._drain_queue()
            return
        engine = self.engine
        assert engine is not None
        agent = engine.agent
        if isinstance(parsed, AppCommand):  # /compact [focus]
            if self.handle is None:
                self.notice("info", "Nothing to compact yet.")
                self._drain_queue()
                return
            conv = self.handle.conversation
            focus = parsed.argument or None
            self._run(lambda c: agent.compact(conv, focus, c), what="Compacting")
            return
        conv_or_none = self._chat_for_input()
        if conv_or_none is None:
            self._drain_queue()
            return
        conv = conv_or_none
        if isinstance(parsed, ChatInput):
            text = parsed.text
            self._run(lambda c: agent.chat(conv, text, c), model_call=True)
        elif isinstance(parsed, ToolCommand):
            tool, args = parsed.tool, parsed.arguments
            self._run(lambda c: agent.run_tool_command(conv, tool, args, c), what="Running")

    def _drain_queue(self) -> None:
        if self._busy or not self.ready or not self._queue or self._closed:
            return
        item = self._queue.pop(0)
        self.emit(QueueChanged(tuple(self.queue)))
        self._send(item)

    def clear_queue(self) -> list[str]:
        """Take back what was waiting (the face puts it back in the input)."""
        texts = self.queue
        self._queue = []
        self.emit(QueueChanged(()))
        return texts

    def stop(self) -> bool:
        """Stop the reply or cancel the compaction that is running (Esc, Ctrl-C)."""
        if self._cancel is not None and not self._cancel.cancelled:
            self._status(self.status_machine.stopping())
            self._cancel.cancel()
            return True
        return False

    # -- branches ----------------------------------------------------------------------
    def edit_message(self, message_id: str, text: str) -> None:
        """Replace a user message with ``text`` on a new branch and answer it."""
        handle, engine = self._branch_target()
        if handle is None or engine is None:
            return

        def then(_result: Any) -> bool:
            self.emit(ConversationReset(handle.chat_id))
            self._run(lambda c: engine.agent.respond(handle.conversation, c), model_call=True)
            return True

        self._run(lambda _c: handle.edit_user_message(message_id, text), then, "Branching")

    def regenerate(self, message_id: str) -> None:
        """Write an assistant reply again (the old one stays as branch 1)."""
        handle, engine = self._branch_target()
        if handle is None or engine is None:
            return

        def then(_result: Any) -> bool:
            self.emit(ConversationReset(handle.chat_id))
            self._run(lambda c: engine.agent.respond(handle.conversation, c), model_call=True)
            return True

        self._run(lambda _c: handle.regenerate_from(message_id), then, "Branching")

    def switch_branch(self, message_id: str, step: int) -> None:
        if self.handle is None or self._busy:
            return
        handle = self.handle

        def then(_result: Any) -> bool:
            self.emit(ConversationReset(handle.chat_id))
            return False

        self._run(lambda _c: handle.switch_branch(message_id, step), then, "Switching branch")

    def _branch_target(self) -> tuple[ChatHandle | None, Engine | None]:
        if self._busy:
            self.notice("warning", "Wait for the reply to finish (or press Esc).")
            return None, None
        if self.handle is None or self.engine is None:
            self.notice("warning", "The model is not loaded yet.")
            return None, None
        return self.handle, self.engine

    # -- jobs --------------------------------------------------------------------------
    def _run(
        self, job: Job, then: Then | None = None, what: str = "", *, model_call: bool = False
    ) -> None:
        """Run ``job`` on the worker; ``then(result)`` runs on the owner thread after."""
        cancel = CancelToken()
        self._cancel = cancel
        self._busy = True
        self._status(self.status_machine.job_started(what, model_call=model_call))
        future = self.worker.submit(job, cancel)
        future.add_done_callback(lambda f: self.dispatch(lambda: self._job_done(f, then)))

    def _job_done(self, future: Future[Any], then: Then | None) -> None:
        if self._closed:
            return
        exc = future.exception()
        if exc is not None:
            self.notice("error", f"Something went wrong: {exc}")
        elif then is not None:
            try:
                if then(future.result()):
                    return
            except (OSError, SessionError, ValueError, KeyError) as err:
                self.notice("error", str(err))
        self._cancel = None
        self._busy = False
        self._status(self.status_machine.job_finished())
        self.emit(ChatsChanged())
        self._drain_queue()

    # -- shutdown ----------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop the job, stop the worker (closing the model), close the chat."""
        if self._closed:
            return
        self.stop()
        self._closed = True
        self.worker.shutdown(wait=True)
        self._close_handle()
        with contextlib.suppress(OSError, SessionError):
            self.store.close_all()
