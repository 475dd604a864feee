"""What the app is doing right now: one thread-safe state machine whose ``Status.text`` every
face shows (phases: docs/ARCHITECTURE.md, "The status")."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import StrEnum

from assistant.agent.events import (
    AgentEvent,
    AssistantDelta,
    ContextChanged,
    ContextUsage,
    MessageAdded,
    PromptProgress,
    ToolCallStarted,
    TurnFinished,
)
from assistant.compaction.events import (
    CompactionCancelled,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    PruneEvent,
    prune_note,
)
from assistant.conversation import CompactionRecord


class Phase(StrEnum):
    LOADING_MODEL = "loading model"
    #: The model could not be loaded; nothing can be sent until another load succeeds.
    FAILED = "failed"
    IDLE = "idle"
    #: A job that is not a model call (opening a branch, a tool the user ran, ...).
    WORKING = "working"
    EVALUATING_PROMPT = "evaluating prompt"
    GENERATING = "generating"
    RUNNING_TOOL = "running tool"
    COMPACTING = "compacting"
    STOPPING = "stopping"


#: Phases in which a job runs (Stop means something, input is queued).
BUSY = frozenset(Phase) - {Phase.LOADING_MODEL, Phase.FAILED, Phase.IDLE}


def summarizer_line(record: CompactionRecord) -> str:
    """Which summarizer wrote the summary and why (a short line for records without notes)."""
    note = record.summarizer_note
    if not note:
        note = {
            "model": "written by the model",
            "hook": "written by a before_compact hook",
        }.get(record.summarizer, f"by the {record.summarizer} fallback")
        if record.rejected:
            note += f": the model's summaries were rejected ({record.rejected[-1]})"
    return f"Summary {note}."


@dataclass(frozen=True)
class Status:
    phase: Phase
    #: The model name (loading), the tool name (running tool), the error (failed), what
    #: the job does (working), or the note left after a job (idle).
    detail: str = ""
    #: 0..1 where known (model load, prompt evaluation).
    progress: float | None = None

    @property
    def busy(self) -> bool:
        return self.phase in BUSY

    @property
    def text(self) -> str:
        d = self.detail
        pct = f" {round(self.progress * 100)}%" if self.progress is not None else ""
        return {
            Phase.LOADING_MODEL: f"Loading {d}…{pct} You can type; messages are sent once it is "
            "ready.",
            Phase.FAILED: f"No model loaded: {d}" if d else "No model loaded",
            Phase.IDLE: d or "Ready",
            Phase.WORKING: f"{d}…" if d else "Working…",
            Phase.EVALUATING_PROMPT: f"Reading the prompt…{pct}",
            Phase.GENERATING: "Writing the reply… (Esc to stop)",
            Phase.RUNNING_TOOL: f"Running {d}…",
            Phase.COMPACTING: "Summarizing older messages… (Esc to cancel)",
            Phase.STOPPING: d or "Stopping…",
        }[self.phase]


class StatusMachine:
    """Thread-safe (events on the worker, actions on the owner); methods return the new
    :class:`Status` when it changed, else None."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._status = Status(Phase.IDLE)
        #: The model's state when it is not usable (loading, failed); None: loaded.
        self._model: Status | None = None
        self._job = False
        #: What the running job left worth saying once it is done (prune, compaction).
        self._note = ""
        self._turn: TurnFinished | None = None
        #: The phase a compaction interrupted (it resumes there).
        self._before_compaction = Phase.WORKING

    @property
    def status(self) -> Status:
        with self._lock:
            return self._status

    def _set(self, status: Status) -> Status | None:
        if status == self._status:
            return None
        self._status = status
        return status

    # -- the model ---------------------------------------------------------------------
    def loading(self, model: str, progress: float | None = None) -> Status | None:
        """A load started (or progressed). Shown now, or when the running job ends."""
        with self._lock:
            self._model = Status(Phase.LOADING_MODEL, model, progress)
            return None if self._job else self._set(self._model)

    def loaded(self, model: str) -> Status | None:
        with self._lock:
            self._model = None
            return None if self._job else self._set(Status(Phase.IDLE, f"Model ready: {model}"))

    def load_failed(self, error: str) -> Status | None:
        with self._lock:
            self._model = Status(Phase.FAILED, error)
            return None if self._job else self._set(self._model)

    # -- jobs --------------------------------------------------------------------------
    def job_started(self, what: str = "", *, model_call: bool = False) -> Status | None:
        with self._lock:
            self._job = True
            self._note = ""
            self._turn = None
            if model_call:
                return self._set(Status(Phase.EVALUATING_PROMPT))
            return self._set(Status(Phase.WORKING, what))

    def stopping(self) -> Status | None:
        with self._lock:
            if not self._job:
                return None
            compacting = self._status.phase is Phase.COMPACTING
            what = "Cancelling the summary…" if compacting else "Stopping…"
            return self._set(Status(Phase.STOPPING, what))

    def job_finished(self) -> Status | None:
        """Back to idle with a note of what happened (or to the model's state)."""
        with self._lock:
            self._job = False
            turn, self._turn = self._turn, None
            note, self._note = self._note, ""
            if self._model is not None:
                return self._set(self._model)
            if turn is not None and turn.stopped:
                note = "Stopped"
            elif turn is not None and turn.error:
                note = "The reply failed (see the message in the chat)"
            return self._set(Status(Phase.IDLE, note))

    def note(self, text: str) -> Status | None:
        with self._lock:
            if self._job or self._model is not None:
                return None
            return self._set(Status(Phase.IDLE, text))

    # -- agent events (worker thread) ----------------------------------------------------
    def on_agent_event(self, event: AgentEvent) -> Status | None:
        with self._lock:
            if isinstance(event, TurnFinished):
                self._turn = event  # the job itself ends the busy state (it may chain)
                return None
            if isinstance(event, ContextChanged):
                return self._context(event)
            phase = self._status.phase
            if not self._job or phase is Phase.STOPPING:
                return None
            if isinstance(event, ContextUsage):
                return self._set(Status(Phase.EVALUATING_PROMPT))
            if isinstance(event, PromptProgress):
                if phase is Phase.COMPACTING:
                    return None
                progress = event.done / event.total if event.total else None
                return self._set(Status(Phase.EVALUATING_PROMPT, progress=progress))
            if isinstance(event, AssistantDelta):
                return None if phase is Phase.GENERATING else self._set(Status(Phase.GENERATING))
            if isinstance(event, ToolCallStarted):
                return self._set(Status(Phase.RUNNING_TOOL, event.call.name))
            if isinstance(event, MessageAdded) and event.message.tool_calls:
                # The reply that asks for tools is done; its cards show before the first
                # call starts (the message is saved in between): say what comes next.
                return self._set(Status(Phase.RUNNING_TOOL, event.message.tool_calls[0].name))
            return None

    def _context(self, event: ContextChanged) -> Status | None:
        ev = event.event
        if isinstance(ev, PruneEvent):
            self._note = prune_note(len(ev.message_ids), ev.tokens_freed)
            return None
        if isinstance(ev, CompactionFinished):
            # No note after the turn: the chat says it (the window's line under the reply,
            # the terminal's [context] line), and an earlier prune's note is summarized too.
            self._note = ""
        if not self._job or self._status.phase is Phase.STOPPING:
            return None
        if isinstance(ev, CompactionStarted):
            if self._status.phase is not Phase.COMPACTING:
                self._before_compaction = self._status.phase
            return self._set(Status(Phase.COMPACTING))
        ended = isinstance(ev, CompactionFinished | CompactionFailed | CompactionCancelled)
        if ended and self._status.phase is Phase.COMPACTING:
            return self._set(Status(self._before_compaction))
        return None
