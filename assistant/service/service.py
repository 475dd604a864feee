# Over 500 lines: the core's one queue of user intents; chats, jobs, status apart.
"""The chat session service: one chat's lifecycle, the input queue, commands, the model and
saving. Qt-free, on one owner thread, never waiting on the model; see docs/ARCHITECTURE.md
("The session service", "Threads")."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from assistant.agent.commands import (
    AppCommand,
    ChatInput,
    CommandError,
    ParsedInput,
    ToolCommand,
    parse_input,
)
from assistant.agent.events import (
    AgentEvent,
    ContextUsage,
    MessageRefused,
    ModelCallFinished,
    Notice,
    PromptProgress,
)
from assistant.agent.usage import context_usage
from assistant.compaction.ahead import Precomputed
from assistant.compaction.branch import BranchSummarizer
from assistant.compaction.recall import PassageIndex
from assistant.compaction.request import CallRequest
from assistant.config import Settings, save_settings
from assistant.conversation import Conversation, Message
from assistant.engine import Engine, build_engine
from assistant.llm.base import CancelToken, LLMBackend, Tunable
from assistant.llm.worker import ModelWorker
from assistant.service import chat_options, latest_fit
from assistant.service.chat_options import ChatOptions
from assistant.service.chat_slot import ChatSlot
from assistant.service.commands import AppCommands
from assistant.service.events import (
    ChatsChanged,
    ConversationReset,
    ModelStateRestored,
    ModelSwitchSuggested,
    PrefillTuned,
    QueueChanged,
    ServiceEvent,
    SettingsChanged,
    StatusChanged,
)
from assistant.service.jobs import Job, JobRunner
from assistant.service.model_slot import ModelSlot
from assistant.service.progress import PrefillTracker, reply_stats
from assistant.service.read_ahead import DraftReader, Target
from assistant.service.resume import ChatResume, engine_tuning
from assistant.service.status import Status, StatusMachine
from assistant.sessions.errors import SessionError
from assistant.sessions.handle import ChatHandle
from assistant.sessions.store import SessionStore
from assistant.sessions.summary import is_branch_summary
from assistant.settings_check import check_against_model
from assistant.tools.approval import Approver

log = logging.getLogger("assistant.service")

Dispatch = Callable[[Callable[[], None]], None]
T = TypeVar("T")


def call_now(fn: Callable[[], None]) -> None:
    """``dispatch`` for a service whose worker runs jobs inline (the terminal chat)."""
    fn()


@dataclass(frozen=True)
class DroppedFile:
    """A file dropped on the window, to be copied into the workspace and read."""

    path: Path


@dataclass(frozen=True)
class Queued:
    """Input waiting to be sent: what was typed and what it was parsed into (once)."""

    text: str
    parsed: ParsedInput | DroppedFile


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
        self.status_machine = StatusMachine()
        self.chat = ChatSlot(store, self.emit)
        self.model = ModelSlot(
            worker, dispatch, self.status_machine, self.emit, self._build_engine,
            on_ready=self._model_ready,
        )
        self.jobs = JobRunner(
            worker, dispatch, self.status_machine, self._status,
            on_error=lambda text: self.notice("error", text), on_idle=self._job_ended,
            on_start=self._job_starting,
        )
        self.commands = AppCommands(self, extra_help)
        self._queue: list[Queued] = []
        self._closed = False
        self._prefill = PrefillTracker(known_speed=self._calibrated_speed)
        self._measure_seq = 0
        #: Saved model states of chats (instant resume) and the prompt settings in force.
        self.saved_states = ChatResume(settings)
        self.chat.before_close = self.saved_states.write_carried
        self.prefill_text = ""
        self._restore_seq = 0
        #: Write the next compaction's summary while the model is idle (see
        #: :mod:`assistant.compaction.ahead`); the token of the one running.
        self.compact_ahead = True
        self._ahead: CancelToken | None = None
        #: Reads the message being typed ahead (the ``read_ahead`` setting).
        self.drafts = DraftReader(worker, dispatch, self._draft_target)
        self._new_chat = Conversation()  # what a draft is read for before the chat exists

    # -- state -------------------------------------------------------------------------
    @property
    def browsing(self) -> bool:
        """Whether another branch is shown than the one the chat is on."""
        return self.chat.view is not None

    def effective_settings(self) -> Settings:
        """The settings with the open chat's own system prompt (what the agent uses)."""
        prompt = self.chat.prompt
        if prompt is None or prompt == self.settings.system_prompt:
            return self.settings
        return self.settings.model_copy(update={"system_prompt": prompt})

    def chat_options(self) -> ChatOptions:
        """The model and system prompt of the open chat (or of the next new one)."""
        if self.chat.handle is None and self.chat.pending is not None:
            return self.chat.pending
        return ChatOptions(self.settings.model, self.effective_settings().system_prompt)

    @property
    def ready(self) -> bool:
        return self.model.engine is not None

    @property
    def queue(self) -> list[str]:
        """What is waiting to be sent, as typed."""
        return [q.text for q in self._queue]

    # -- events ------------------------------------------------------------------------
    def emit(self, event: ServiceEvent) -> None:
        if not self._closed:
            self.on_event(event)

    def notice(self, level: Literal["info", "warning", "error"], text: str) -> None:
        self.emit(Notice(level, text))

    def _status(self, changed: Status | None) -> None:
        if changed is not None:
            self.emit(StatusChanged(changed))

    def _agent_event(self, event: AgentEvent) -> None:
        """From the worker thread: the status the event causes first, so a window never shows a
        reply's first words under the previous step's status; then the event and its figures."""
        changed = self.status_machine.on_agent_event(event)
        if changed is not None:
            self.emit(StatusChanged(changed, leads=True))
        self.emit(event)
        if isinstance(event, ContextUsage):
            self._prefill.prompt_ready(event)
        elif isinstance(event, PromptProgress):
            self.emit(self._prefill.progress(event))
        elif isinstance(event, ModelCallFinished):
            self._prefill.observed(event.result)
            self.emit(reply_stats(event.result, event.ttft_s))

    def _calibrated_speed(self) -> float | None:
        """Prompt tokens per second the loaded model was calibrated at (None: unknown)."""
        engine = self.model.engine
        calibration = getattr(engine.backend, "calibration", None) if engine else None
        speed = getattr(calibration, "tokens_per_s", None)
        return float(speed) if isinstance(speed, int | float) and speed > 0 else None

    # -- the model and the settings ----------------------------------------------------
    def _build_engine(self, backend: LLMBackend) -> Engine:
        engine = build_engine(
            backend, self.effective_settings, self.approver, self._agent_event,
            recall_index=self._recall_index,
        )
        engine.controller.defer_model = self._defers_summary
        # Branch summaries are measured with the loaded model's tokenizer from now on.
        branches = BranchSummarizer(engine.controller.counter, window=backend.info.context_window)
        self.store.summarizer = branches
        if self.chat.handle is not None:
            self.chat.handle.summarizer = branches
        return engine

    def _recall_index(self, conv: Conversation) -> PassageIndex | None:
        """The open chat's full-text index, for recall (run on the model worker)."""
        handle = self.chat.handle
        if handle is None or handle.conversation is not conv or handle.closed:
            return None
        return handle.recall_index()

    def _model_ready(self) -> None:
        """Check the settings against the now-known model, then send what waited for it."""
        engine = self.model.engine
        if engine is not None:
            self._tune(engine.backend)
            info = engine.backend.info
            check = check_against_model(self.settings, info.trained_context, engine.backend.count)
            for problem in check.errors:
                self.notice("error", f"{problem} Change it in Settings (Ctrl+,).")
            if self.chat.handle is not None:
                self._restore_state()
        self.measure_context()
        self._drain_queue()

    def context_window_for(self, settings: Settings) -> int:
        """The n_ctx a model loaded with ``settings`` gets."""
        return self.model.window_for(settings, self.settings.model)

    def load_model(self) -> None:
        self._cancel_ahead()
        self.model.load(self.settings)

    def apply_settings(self, new: Settings, *, reconnect: bool = False) -> bool:
        """Use and save new settings; returns whether the model reloads (``reconnect``: a new API
        key)."""
        old = self.settings
        reload = self.model.needs_reload(old, new, reconnect=reconnect)
        self.settings = new
        self.saved_states.configure(new)
        if self.persist_settings is not None:
            try:
                self.persist_settings(new)
            except OSError as exc:
                self.notice("error", f"Could not save the settings: {exc}")
        self.emit(SettingsChanged(new, reload))
        if reload:
            self.load_model()
        else:
            engine = self.model.engine
            if engine is not None and engine_tuning(new) != engine_tuning(old):
                self._tune(engine.backend)
                if self.chat.handle is not None:
                    self._restore_state()  # new batch sizes start with an empty cache
            self._status(self.status_machine.note("Settings saved"))
            self.measure_context()
            if new.compaction.compact_ahead != old.compaction.compact_ahead:
                if new.compaction.compact_ahead:
                    self._start_ahead()
                else:
                    self._cancel_ahead()
        return reload

    # -- work on the model worker ------------------------------------------------------
    def _on_worker(
        self, job: Callable[[], T], then: Callable[[T], None],
        failed: Callable[[BaseException], None],
    ) -> None:
        """Run ``job`` on the model worker, then on the owner thread, unless the service
        closed meanwhile: ``then(result)``, or ``failed(exception)``."""
        future = self.worker.submit(job)

        def done() -> None:
            if self._closed:
                return
            exc = future.exception()
            if exc is None:
                then(future.result())
            else:
                failed(exc)

        future.add_done_callback(lambda _f: self.dispatch(done))

    # -- prompt evaluation and saved states --------------------------------------------
    def _tune(self, backend: LLMBackend) -> None:
        """Apply the prompt-evaluation settings on the worker (before any queued job)."""
        if not isinstance(backend, Tunable):
            return
        tunable: Tunable = backend
        tuning = engine_tuning(self.settings)
        self._on_worker(lambda: tunable.tune(tuning), self._tuned, lambda exc: self.notice(
            "error", f"Could not apply the prompt evaluation settings: {exc}"))

    def _tuned(self, text: str) -> None:
        self.prefill_text = text
        self.emit(PrefillTuned(text))

    def _after_reply(self, _result: Any) -> bool:
        """A model job ended: save the chat's KV state on the worker, so reopening it is instant."""
        handle, engine = self.chat.handle, self.model.engine
        if handle is not None and engine is not None:
            job = self.saved_states.save_job(engine.backend, handle.chat_id)
            if job is not None:
                self.worker.submit(job)
        return False

    def _restore_state(self) -> None:
        """Load the open chat's saved KV state on the worker (dropped if another chat opens)."""
        handle, engine = self.chat.handle, self.model.engine
        if handle is None or engine is None:
            return
        self._restore_seq += 1
        seq = self._restore_seq
        # The controller continues the chat where it was (the prompt the state holds).
        self.worker.submit(self.saved_states.carry_in_job(engine.controller, handle))
        job = self.saved_states.restore_job(
            engine.backend, handle.chat_id, lambda: seq == self._restore_seq
        )
        if job is not None:  # an exception is a bug, not a damaged file (those load as nothing)
            self._on_worker(job, self._restored, lambda exc: self.notice(
                "warning", f"The chat's saved model state was not used: {exc}"))

    def _restored(self, got: ModelStateRestored) -> None:
        self.emit(got)
        if got.tokens and not self.jobs.busy:
            self._status(self.status_machine.note(
                f"Chat resumed from its saved state ({got.tokens:,} tokens ready)"
            ))

    def use_model(self, model: str) -> bool:
        """Load ``model`` (a name or a GGUF path); returns whether a reload started."""
        if model == self.settings.model and self.model.state != "failed":
            return False
        return self.apply_settings(self.settings.model_copy(update={"model": model}))

    def set_chat_options(self, options: ChatOptions, *, as_default: bool = False) -> bool:
        """The open (or next) chat's own model and prompt; ``as_default``: the prompt for new chats
        too."""
        if self._refuse_while_busy("changing the chat's model or system prompt"):
            return False
        engine = self.model.engine
        if engine is not None and options.model == self.settings.model:
            trial = self.settings.model_copy(update={"system_prompt": options.system_prompt})
            info = engine.backend.info
            problems = check_against_model(trial, info.trained_context, engine.backend.count)
            for problem in problems.errors:
                self.notice("error", problem)
            if problems.errors:
                return False
        handle = self.chat.handle
        if handle is None:
            self.chat.pending = options
        else:
            if handle.read_only is not None:
                self.notice("error", "This chat is read-only (it has damaged lines).")
                return False
            try:
                if options.system_prompt != self.effective_settings().system_prompt:
                    handle.record_setting(chat_options.SYSTEM_PROMPT, options.system_prompt)
            except (OSError, SessionError) as exc:
                self.notice("error", f"Cannot save the chat's options: {exc}")
                return False
        self.chat.prompt = options.system_prompt
        if as_default and options.system_prompt != self.settings.system_prompt:
            self.apply_settings(
                self.settings.model_copy(update={"system_prompt": options.system_prompt})
            )
        if not self.use_model(options.model):
            self.measure_context()
        self._status(self.status_machine.note("Chat options saved"))
        return True

    def _remember_model(self) -> None:
        """The chat records the model that answers in it (when it changed)."""
        handle = self.chat.handle
        if handle is None or handle.read_only is not None:
            return
        if self.chat.recorded(chat_options.MODEL) != self.settings.model:
            with contextlib.suppress(OSError, SessionError):
                handle.record_setting(chat_options.MODEL, self.settings.model)

    # -- the context bar ---------------------------------------------------------------
    def measure_context(self) -> None:
        """Count the shown chat's next prompt on the worker, so the context bar needs no model
        call."""
        engine = self.model.engine
        if engine is None or self._closed:
            return
        conv = self.chat.shown_conversation
        prompt = engine.agent.settings().system_prompt  # as sent (with the tools' note)
        tools = engine.agent.offered_tools()
        self._measure_seq += 1
        seq = self._measure_seq

        def job() -> AgentEvent:
            return context_usage(engine.controller.measure(
                CallRequest(conv, prompt, tools=tools), as_next=True))

        def measured(usage: AgentEvent) -> None:
            if seq == self._measure_seq:  # else a newer count is on its way
                self.emit(usage)

        self._on_worker(job, measured, lambda _exc: None)

    # -- compaction ahead of time ------------------------------------------------------
    def _start_ahead(self) -> None:
        """While idle: write the next compaction's summary on the worker at low priority
        (``ContextController.precompute``); anything the user does first cancels it."""
        engine, handle = self.model.engine, self.chat.handle
        if (not self.compact_ahead or not self.settings.compaction.compact_ahead
                or engine is None or handle is None or self.jobs.busy
                or self._queue or self.browsing or self._closed
                or handle.read_only is not None):
            return
        self._cancel_ahead()
        token = CancelToken()
        self._ahead = token
        conv = handle.conversation
        prompt = engine.agent.settings().system_prompt
        tools = engine.agent.offered_tools()

        carry_out = self.saved_states.carry_job(engine.controller, handle)

        def job() -> Precomputed | None:
            if token.cancelled:
                return None
            got = engine.controller.precompute(CallRequest(conv, prompt, tools, token))
            if got is not None:
                carry_out()  # the summary is kept for the first compaction after a restart
            return got

        def failed(exc: BaseException) -> None:  # the threshold's compaction writes one
            log.warning("Writing the next summary ahead of time failed: %s", exc)
            self._ahead_done(token, None)

        self._on_worker(job, partial(self._ahead_done, token), failed)

    def _job_starting(self) -> None:
        self._cancel_ahead()
        self.drafts.cancel()

    def draft_changed(self, text: str) -> None:
        """The message being typed is now ``text`` (read ahead while the model is idle)."""
        self.drafts.draft_changed(text)

    def _draft_target(self) -> Target | None:
        engine, handle = self.model.engine, self.chat.handle
        if (not self.settings.compaction.read_ahead or engine is None or self.jobs.busy
                or self._queue or self.browsing or self._closed
                or (handle is not None and handle.read_only is not None)):
            return None
        return Target(engine.agent, handle.conversation if handle else self._new_chat)

    def _defers_summary(self) -> bool:
        """Whether a compaction in a turn takes the code's summary now, the model's later
        (not in the terminal chat, whose jobs run inline, nor with the setting off)."""
        return self.compact_ahead and self.settings.compaction.compact_ahead

    def _cancel_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.cancel()
            self._ahead = None

    def _ahead_done(self, token: CancelToken, got: Precomputed | None) -> None:
        if self._ahead is token:
            self._ahead = None
        if got is not None and not token.cancelled and not self.jobs.busy:
            self._status(self.status_machine.note(
                f"Summary for the next compaction ready ({got.seconds:.0f} s, written while "
                "you read)"
            ))

    # -- chats -------------------------------------------------------------------------
    def _refuse_while_busy(self, doing: str = "") -> bool:
        if self.jobs.busy:
            self.notice("warning", f"Stop the reply (Esc) before {doing}." if doing
                        else "Wait for the reply to finish (or press Esc).")
        return self.jobs.busy

    def new_chat(self) -> bool:
        """Start a new chat (its file is created with the first message)."""
        if self._refuse_while_busy("starting a new chat"):
            return False
        self._restore_seq += 1  # a restore still waiting is for the old chat: drop it
        self._cancel_ahead()
        self.chat.new()  # a new conversation: "allow for this chat" answers reset
        self._status(self.status_machine.note("New chat"))
        self.measure_context()
        return True

    def open_chat(self, chat_id: str) -> bool:
        """Open a saved chat (takes its lock: another window or terminal cannot write it)."""
        if chat_id == self.chat.chat_id:
            return True
        if self._refuse_while_busy("switching chats"):
            return False
        self._restore_seq += 1  # a restore still waiting is for the old chat: drop it
        self._cancel_ahead()
        if not self.chat.open(chat_id):
            return False
        # A note about the chat left ("Summary for the next compaction ready") is not about
        # this one.
        self._status(self.status_machine.note(""))
        chat_model = self.chat.recorded(chat_options.MODEL)
        if chat_model is not None and chat_model != self.settings.model:
            self.emit(ModelSwitchSuggested(chat_id, chat_model, self.settings.model))
        if self.model.engine is not None:
            self._restore_state()
        self.measure_context()
        return True

    def resume(self, ref: str) -> bool:
        """Open the chat ``ref`` names: an id, ``last``, or part of a title."""
        found = self.chat.find(ref)
        return found is not None and self.open_chat(found.id)

    def repair_chat(self) -> str | None:
        """Write a repaired copy of the open read-only chat beside it and open it."""
        handle = self.chat.handle
        if handle is None or handle.read_only is None:
            return None
        original = handle.chat_id
        try:
            copy_id = self.store.repair(original)
        except (OSError, SessionError) as exc:
            self.notice("error", f"Cannot repair the chat: {exc}")
            return None
        self.chat.close()
        if self.open_chat(copy_id):
            self.notice(
                "info",
                f"Opened the repaired copy ({len(self.chat.conversation.messages)} messages). The "
                f"original {original}.jsonl is kept as it was.",
            )
        return copy_id

    def delete_chat(self, chat_id: str) -> None:
        """Move a chat to the trash (:meth:`undo_delete` brings it back)."""
        if chat_id == self.chat.chat_id and self._refuse_while_busy("deleting this chat"):
            return
        self.chat.delete(chat_id)
        self.saved_states.forget(chat_id)  # its model state holds its text too

    def undo_delete(self) -> str | None:
        chat_id = self.chat.undo_delete()
        if chat_id is not None:
            self._status(self.status_machine.note("Chat restored"))
        return chat_id

    # -- sending -----------------------------------------------------------------------
    def submit(self, text: str) -> bool:
        """Run, send or queue what the user typed; False: refused (a notice says why)."""
        parsed = parse_input(text)
        self.drafts.draft_changed("")  # sent: nothing is being typed
        if isinstance(parsed, CommandError):
            self.notice("error", parsed.message)
            return False
        handle = self.chat.handle
        read_only = handle.read_only if handle is not None else None
        if read_only is not None and not isinstance(parsed, AppCommand):
            self.notice("warning", f"Not sent: {read_only}")  # damaged lines; see repair_chat
            return False
        if isinstance(parsed, AppCommand) and parsed.name != "compact" and not self.jobs.busy:
            self.commands.run(parsed)
        else:
            self._queue_or_send(Queued(text, parsed))
        return True

    def keep_unsent(self, text: str) -> bool:
        """Save a message unanswered while there is no model, so typed text is never lost."""
        handle = self.chat.handle
        if handle is not None and handle.read_only is not None:
            self.notice("warning", f"Not saved: {handle.read_only}")
            return False
        conv = self.chat.ensure(self.settings.system_prompt)
        if conv is None:
            return False
        try:
            conv.append(Message(role="user", content=text))
        except (OSError, SessionError) as exc:
            self.notice("error", f"Could not save the message: {exc}")
            return False
        self.emit(ChatsChanged())
        return True

    def answer_kept(self) -> bool:
        """Answer the chat when its last message is a kept user message; False if there is none."""
        handle, engine = self.chat.handle, self.model.engine
        if handle is None or engine is None or self.jobs.busy:
            return False
        conv = handle.conversation
        last = conv.messages[-1] if conv.messages else None
        if last is None or last.role != "user" or is_branch_summary(last):
            return False
        self._remember_model()
        agent = engine.agent
        self.jobs.run(lambda c: agent.respond(conv, c), self._after_reply, model_call=True)
        return True

    def compact(self, focus: str | None = None) -> None:
        """Summarize older messages now (queued like typed input while a job runs)."""
        self._queue_or_send(Queued("/compact" + (f" {focus}" if focus else ""),
                                   AppCommand("compact", focus or "")))

    def drop_file(self, path: Path) -> None:
        """Read a dropped file into the chat (queued like typed input while busy or loading)."""
        self._queue_or_send(Queued(f"(file) {path.name}", DroppedFile(path)))

    def _queue_or_send(self, item: Queued) -> None:
        if self.jobs.busy or not self.ready or self._queue:
            self._queue.append(item)
            self.emit(QueueChanged(tuple(self.queue)))
        else:
            self._send(item)

    def _send(self, item: Queued) -> None:
        parsed = item.parsed
        if isinstance(parsed, AppCommand) and parsed.name != "compact":
            self.commands.run(parsed)
            self._drain_queue()
            return
        engine = self.model.engine
        assert engine is not None
        agent = engine.agent
        if isinstance(parsed, AppCommand):  # /compact [focus]
            handle = self.chat.handle
            if handle is None:
                self.notice("info", "Nothing to compact yet.")
                self._drain_queue()
                return
            job: Job = partial(agent.compact, handle.conversation, parsed.argument or None)
            self.jobs.run(self._on_shown_branch(job), what="Compacting")
            return
        conv = self.chat.ensure(self.settings.system_prompt)
        if conv is None:
            self._drain_queue()
            return
        if isinstance(parsed, ChatInput):
            self._remember_model()
            job = partial(agent.chat, conv, parsed.text)
            self.jobs.run(self._on_shown_branch(job), self._after_reply, model_call=True)
        elif isinstance(parsed, ToolCommand):
            job = partial(agent.run_tool_command, conv, parsed.tool, parsed.arguments)
            self.jobs.run(self._on_shown_branch(job), what="Running")
        elif isinstance(parsed, DroppedFile):
            job = partial(agent.drop_file, conv, parsed.path)
            self.jobs.run(self._on_shown_branch(job), what="Reading the file")

    def _on_shown_branch(self, job: Job) -> Job:
        """``job``, run on the branch the user looks at: the chat moves to it first."""
        view, handle = self.chat.view, self.chat.handle
        if view is None or handle is None:
            return job
        self.chat.view = None

        def run(cancel: CancelToken) -> Any:
            handle.switch_to(view.leaf)
            self.emit(ConversationReset(handle.chat_id))
            return job(cancel)

        return run

    def _job_ended(self) -> None:
        self.emit(ChatsChanged())
        handle, engine = self.chat.handle, self.model.engine
        if handle is not None and engine is not None and not self._closed:
            self.worker.submit(self.saved_states.carry_job(engine.controller, handle))
        if not self._queue:
            self.measure_context()  # the reply or the tool output is in the chat now
            self._start_ahead()
            self.drafts.resume()  # what was typed meanwhile
        self._drain_queue()

    def _drain_queue(self) -> None:
        if self.jobs.busy or not self.ready or not self._queue or self._closed:
            return
        item = self._queue.pop(0)
        self.emit(QueueChanged(tuple(self.queue)))
        self._send(item)

    def stop(self) -> bool:
        """Stop the reply or cancel the compaction that is running (Esc, Ctrl-C)."""
        self._cancel_ahead()
        return self.jobs.stop()

    # -- branches ----------------------------------------------------------------------
    def edit_message(self, message_id: str, text: str) -> None:
        """Answer ``text`` in place of a user message, on a new branch (refused if it cannot
        fit)."""
        self._branch_and_answer(
            lambda h: h.edit_user_message(message_id, text),
            lambda h, fit: latest_fit.edit_refusal(h, message_id, text, fit),
        )

    def regenerate(self, message_id: str) -> None:
        """Write an assistant reply again on a new branch (refused if its question no longer
        fits)."""
        self._branch_and_answer(
            lambda h: h.regenerate_from(message_id),
            lambda h, fit: latest_fit.regenerate_refusal(h, message_id, fit),
            regenerate=True,
        )

    def switch_branch(self, message_id: str, step: int) -> None:
        """Show another version (``< >``); the chat moves there only when the user continues on
        it."""
        if self.jobs.busy:
            return
        other = self.chat.browse(message_id, step)
        if other is None:
            return
        note = "Viewing another branch: send a message to continue on it" if other else ""
        self._status(self.status_machine.note(note))
        self.measure_context()

    def continue_reply(self) -> None:
        """Write more of the last reply (Chat → Continue generation) as its next version."""
        if self._refuse_while_busy():
            return
        handle, engine = self.chat.handle, self.model.engine
        if handle is None or engine is None:
            self.notice("warning", "There is no reply to continue yet." if engine is not None
                        else "The model is not loaded yet.")
            return

        def branch(reply: Message) -> None:
            handle.regenerate_from(reply.id)
            self.emit(ConversationReset(handle.chat_id))

        job = self._on_shown_branch(
            lambda c: engine.agent.continue_reply(handle.conversation, branch, c)
        )
        self.jobs.run(job, self._after_reply, model_call=True)

    def delete_message(self, message_id: str) -> None:
        """Delete a message as a new branch without it (the old branch stays: ``< >``)."""
        if self._refuse_while_busy():
            return
        handle = self.chat.handle
        if handle is None:
            return

        def job(_cancel: CancelToken) -> str | None:
            try:
                handle.delete_message(message_id)
            except (KeyError, ValueError) as exc:
                return str(exc).strip("'") or "That message is not in this chat."
            return None

        def then(refused: str | None) -> bool:
            self.emit(ConversationReset(handle.chat_id))
            if refused:
                self.notice("warning", f"Not deleted: {refused}")
            else:
                self.notice("info", "Message deleted: the chat goes on without it on a new "
                                    "branch; the version with it stays in the chat as "
                                    "another branch.")
            return False

        self.jobs.run(self._on_shown_branch(job), then, "Deleting")

    def _branch_and_answer(
        self,
        branch: Callable[[ChatHandle], object],
        check: Callable[[ChatHandle, latest_fit.FitCheck], MessageRefused | None],
        *,
        regenerate: bool = False,
    ) -> None:
        if self._refuse_while_busy():
            return
        handle, engine = self.chat.handle, self.model.engine
        if handle is None or engine is None:
            self.notice("warning", "The model is not loaded yet.")
            return

        fit = latest_fit.FitCheck(engine.controller, engine.agent.settings().system_prompt,
                                  engine.agent.offered_tools())

        def job(_cancel: CancelToken) -> MessageRefused | None:
            refused = check(handle, fit)  # on the worker: counting uses the model
            if refused is None:
                branch(handle)
            return refused

        def answer(refused: MessageRefused | None) -> bool:
            if refused is not None:  # nothing was written: the face offers it for editing
                self.emit(refused)
                self.notice("error", latest_fit.refusal_text(refused, regenerate=regenerate))
                return False
            self.chat.view = None  # the edit or the new reply made its own branch
            self.emit(ConversationReset(handle.chat_id))
            self.jobs.run(
                lambda c: engine.agent.respond(handle.conversation, c), self._after_reply,
                model_call=True,
            )
            return True

        self.jobs.run(job, answer, "Branching")

    # -- shutdown ----------------------------------------------------------------------
    def shutdown(self) -> None:
        if self._closed:
            return
        self.stop()
        self._closed = True
        self.model.closed = True
        self.jobs.closed = True
        self.worker.shutdown(wait=True)
        self.saved_states.writer.close()
        self.chat.close()
        with contextlib.suppress(OSError, SessionError):
            self.store.close_all()
