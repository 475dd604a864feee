"""The compaction wait on a full workload (W1, W2), driven through the session service as
the window drives it (``python -m bench.compaction_wait --workload W2``).

The workload's user steps go to :class:`~assistant.service.service.ChatService` one by one
with the shipped settings (local mode, the model's measured effective context, compaction
ahead on or off): a chat message is typed text, a ``read_file`` step is the user's
``/read path`` and W1's ``write_file`` step is the user saving the file in the workspace
themselves (no chat message). The service runs on its real model worker thread; its
completions run on this thread, as the window's event loop runs them.

The user reads each reply: after a reply the next step is sent once the service's
precompute (the summary written ahead of time, which starts when the model goes idle) has
finished, or after ``pause_cap`` seconds (the next message then cancels it, as in the app).
That is a user who reads for as long as the summary takes; the time is reported per pause
(:attr:`Pause.seconds`) so the reader sees what "ahead" needs. After a ``/read`` (no reply)
the user types on at once: a summary started then is cancelled by the next step, as in the
app. Per compaction the run
records its time inside the turn (``CompactionRecord.duration_s``, what the user waits for
before the prompt is read) and whether the summary written ahead was used.
"""

from __future__ import annotations

import queue
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from assistant.agent.events import ContextChanged
from assistant.compaction.events import CompactionFinished
from assistant.compaction.summary import DEFERRED_NOTE
from assistant.config import Settings
from assistant.llm.base import LLMBackend
from assistant.llm.worker import ModelWorker
from assistant.service.events import ReplyStats, ServiceEvent, StatusChanged
from assistant.service.service import ChatService
from assistant.sessions.store import SessionStore
from bench.workloads import ChatStep, ToolStep, Workload

#: The note ``CompactionRecord.summarizer_note`` carries when the summary written ahead was
#: used (see ``compaction/compactor.py``).
AHEAD_NOTE = "written ahead of time"
#: The status note the service leaves when a summary was written ahead (``_ahead_done``).
READY_NOTE = "Summary for the next compaction ready"


def source(kind: str, note: str) -> str:
    """Who wrote a summary, from its kind and note (``SummaryOutcome``): "model" (the
    model's summary, accepted), "code now" (extractive, written in the turn while the
    model's is left to the reading pauses), "rejected" (the extractive fallback after the
    model's summaries were rejected), "not asked" (extractive: the model was no longer
    asked or the window was too small for it) or "record" (only the record of what the
    user said)."""
    if kind == "model":
        return "model"
    if note == DEFERRED_NOTE:
        return "code now"
    if "rejected twice" in note:
        return "rejected"
    if "only the record" in note:
        return "record"
    return "not asked" if kind == "extractive" else kind


def sources(pairs: list[tuple[str, str]]) -> str:
    """``source`` counted over (kind, note) pairs, in words."""
    counts: dict[str, int] = {}
    for kind, note in pairs:
        got = source(kind, note)
        counts[got] = counts.get(got, 0) + 1
    words = {"model": "the model's (accepted)",
             "code now": "the code's at once (the model's left to the reading pauses)",
             "rejected": "extractive after rejection",
             "not asked": "extractive, model not asked", "record": "record only"}
    order = [*words, *sorted(set(counts) - set(words))]
    return ", ".join(f"{counts[k]} {words.get(k, k)}" for k in order if k in counts)


class OwnerLoop:
    """The owner thread's queue: the service's ``dispatch`` puts, :meth:`run_until` runs
    them on this thread (the window's event loop, without Qt)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()

    def dispatch(self, fn: Callable[[], None]) -> None:
        self._queue.put(fn)

    def run_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Run completions until ``done()``; False when ``timeout`` seconds passed first."""
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                fn = self._queue.get(timeout=min(0.05, left))
            except queue.Empty:
                continue
            fn()
        return True

    def drain(self) -> None:
        """Run the completions queued so far."""
        while True:
            try:
                fn = self._queue.get_nowait()
            except queue.Empty:
                return
            fn()


@dataclass
class Compaction:
    #: The user step (1-based, chat messages and /read both count) whose turn compacted.
    step: int
    #: Seconds the compaction took inside the turn (``CompactionRecord.duration_s``).
    wait_s: float
    #: Whether the summary written ahead of time was used.
    ahead_used: bool
    summarizer: str
    note: str
    #: The turn's first model call after it: prompt tokens evaluated (not from the cache)
    #: and seconds to its first token. A summary that changed between compactions would
    #: make the next turn evaluate about as much again.
    evaluated: int = 0
    ttft_s: float | None = None


@dataclass
class Pause:
    """The user's reading time after one reply, while the service wrote ahead."""

    step: int
    seconds: float
    #: Whether a summary was written (False: not needed yet, or cut off by the cap).
    wrote: bool
    capped: bool
    #: The written summary's kind and note (``SummaryOutcome``), when one was written.
    kind: str = ""
    note: str = ""


@dataclass
class WorkloadRun:
    workload: str
    ahead: bool
    window: int = 0
    steps: int = 0
    messages: int = 0
    compactions: list[Compaction] = field(default_factory=list)
    pauses: list[Pause] = field(default_factory=list)
    seconds: float = 0.0
    #: Why the run ended before the workload's last step ("" when it did not).
    cut: str = ""

    @property
    def median(self) -> float | None:
        waits = [c.wait_s for c in self.compactions]
        return statistics.median(waits) if waits else None


def user_steps(wl: Workload, turns: int | None) -> list[ChatStep | ToolStep]:
    """The workload's steps up to its ``turns``-th chat message (None: all of them)."""
    out: list[ChatStep | ToolStep] = []
    said = 0
    for step in wl.steps:
        if turns is not None and said >= turns:
            break
        out.append(step)
        said += isinstance(step, ChatStep)
    return out


def typed(step: ChatStep | ToolStep, workspace: Path) -> str | None:
    """What the user types for ``step`` (None: nothing typed; a file saved by the user)."""
    if isinstance(step, ChatStep):
        return step.text
    if step.tool == "read_file":
        return f"/read {step.arguments['path']}"
    if step.tool == "write_file":
        target = workspace / str(step.arguments["path"])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(str(step.arguments["content"]), encoding="utf-8")
        return None
    raise ValueError(f"no typed form for the {step.tool} step")


def run_workload(
    wl: Workload,
    settings: Settings,
    factory: Callable[[str, int, int], LLMBackend],
    *,
    ahead: bool,
    turns: int | None = None,
    pause_cap: float = 600.0,
    step_timeout: float = 900.0,
    budget_s: float | None = None,
    log: Callable[[str], None] = lambda _line: None,
) -> WorkloadRun:
    """Drive ``wl``'s user steps through a :class:`ChatService` on ``factory``'s model.

    ``settings`` are used as given except for the workspace (a temporary folder holding
    the workload's files) and the compaction-ahead switch (``ahead``). ``budget_s``: no new
    step is sent after that many seconds (the run says where it was cut)."""
    started = time.perf_counter()
    out = WorkloadRun(wl.name, ahead)
    steps = user_steps(wl, turns)
    with tempfile.TemporaryDirectory(prefix="bench-wait-") as tmp:
        root = Path(tmp)
        workspace = root / "workspace"
        wl.write_workspace(workspace)
        settings = settings.model_copy(deep=True)
        settings.workspace = str(workspace)
        settings.compaction.compact_ahead = ahead
        heard: list[ServiceEvent] = []
        loop = OwnerLoop()
        service = ChatService(
            settings, SessionStore(root / "sessions"), ModelWorker(factory), None,
            heard.append, dispatch=loop.dispatch, persist_settings=None,
        )
        try:
            service.load_model()
            if not loop.run_until(lambda: service.model.state != "loading", step_timeout):
                raise RuntimeError("the model did not load in time")
            engine = service.model.engine
            if engine is None:
                raise RuntimeError(f"the model did not load: {service.model.error}")
            out.window = engine.controller.policy().window
            for n, step in enumerate(steps, 1):
                if budget_s is not None and time.perf_counter() - started > budget_s:
                    out.cut = f"time budget of {budget_s:.0f} s reached before step {n}"
                    break
                text = typed(step, workspace)
                if text is None:
                    continue
                heard.clear()
                if not service.submit(text):
                    raise RuntimeError(f"step {n} was refused: {text[:60]!r}")
                if not loop.run_until(lambda: not service.jobs.busy and not service.queue,
                                      step_timeout):
                    out.cut = f"step {n} took longer than {step_timeout:.0f} s"
                    break
                out.steps = n
                out.messages += isinstance(step, ChatStep)
                compacted: Compaction | None = None
                for ev in heard:
                    if isinstance(ev, ContextChanged) and isinstance(ev.event,
                                                                     CompactionFinished):
                        rec = ev.event.record
                        compacted = Compaction(
                            n, rec.duration_s, AHEAD_NOTE in rec.summarizer_note,
                            rec.summarizer, rec.summarizer_note)
                        out.compactions.append(compacted)
                    elif isinstance(ev, ReplyStats) and compacted is not None:
                        compacted.evaluated, compacted.ttft_s = ev.evaluated, ev.ttft_s
                        compacted = None
                log(f"  step {n}/{len(steps)}: {len(out.compactions)} compaction(s), "
                    f"{time.perf_counter() - started:.0f} s")
                if ahead and isinstance(step, ChatStep) and n < len(steps):
                    # The user reads the reply (after a /read they type on at once).
                    out.pauses.append(_read(service, loop, heard, n, pause_cap))
        finally:
            service.shutdown()
    out.seconds = round(time.perf_counter() - started, 1)
    return out


def _read(service: ChatService, loop: OwnerLoop, heard: list[ServiceEvent], step: int,
          cap: float) -> Pause:
    """The user reads the reply until the summary written ahead is done (or ``cap``)."""
    start = time.perf_counter()
    # The worker runs one job at a time in order: a job queued behind the precompute ends
    # once it has (its completion is then already queued here).
    behind = service.worker.submit(lambda: None)
    finished = loop.run_until(behind.done, cap)
    seconds = time.perf_counter() - start
    loop.drain()
    wrote = any(isinstance(ev, StatusChanged) and ev.status.detail.startswith(READY_NOTE)
                for ev in heard)
    newest = (service.model.engine.controller.summary_cache.newest()
              if wrote and service.model.engine is not None else None)
    kind, note = (newest.outcome.kind, newest.outcome.note) if newest is not None else ("", "")
    return Pause(step, round(seconds, 2), wrote, not finished, kind, note)

