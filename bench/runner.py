"""Drive one workload with one strategy through the real agent loop, recording everything.

For each step of the workload: a chat step is ``Agent.chat`` (the model writes the reply;
``step_limit`` bounds any tool round the model starts itself); a live tool step is
``Agent.run_tool_command`` (a user-initiated call, exactly like ``/read``) in a fresh
workspace holding the workload's files; a non-live step (the oversized W3 output) appends
the recorded call and result verbatim. After the workload, each planted fact is checked in
the last prompt and then asked as a question (phase ``probe``; not part of the per-turn
numbers).

A :class:`~.recording.RecordingBackend` sits between the agent/controller and the real
backend and reports every model call (chat or summarizer) to the :class:`Recorder`, which
keeps it as a :class:`~.metrics.CallRecord`.
"""

from __future__ import annotations

import logging
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assistant.agent.events import (
    AgentEvent,
    AssistantDelta,
    ContextChanged,
    Notice,
    TurnFinished,
)
from assistant.agent.loop import Agent
from assistant.compaction.controller import ContextController
from assistant.compaction.events import CompactionFailed, CompactionFinished, PruneEvent
from assistant.compaction.summary import MECHANICAL_MARKER, TOO_SMALL_FOR_GRAMMAR, Summarizer
from assistant.compaction.tokens import TokenCounter
from assistant.config import Sampling, Settings
from assistant.conversation import Conversation, Message, ToolCall
from assistant.engine import attach_recall, recall_focus
from assistant.llm.base import (
    GenerationResult,
    LLMBackend,
    PromptCounter,
)
from assistant.tools.registry import ToolRegistry

from .metrics import (
    CallKind,
    CallRecord,
    CompactionStat,
    FactResult,
    Phase,
    PruneStat,
    RunRecord,
    TurnRecord,
    answer_matches,
    facts_in_text,
    visibility_of,
)
from .recording import recording_backend
from .strategies import DropHalf, Strategy, StrategyName, build_strategy
from .workloads import ChatStep, Fact, ToolStep, Workload

log = logging.getLogger("bench")

SummarizerFactory = Callable[[PromptCounter, TokenCounter], Summarizer]


@dataclass
class RunOptions:
    #: Longest chat reply (kept small so time is bounded and comparable).
    max_reply_tokens: int = 48
    #: Longest reply to an end-of-run question.
    probe_reply_tokens: int = 32
    temperature: float = 0.0
    #: Tool rounds the model may start itself per turn (the workload's calls are the user's).
    step_limit: int = 1
    ask_questions: bool = True
    #: Ask only the first planted fact of each kind (the quick run: bounded time).
    one_question_per_kind: bool = False
    #: Before each chat step, untimed, read ahead the message less its last word, as the
    #: app does while the user types (``Agent.read_ahead``; the send is timed as ever).
    read_ahead: bool = False
    progress: Callable[[str], None] | None = None


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class Recorder:
    """Collects calls, turns and context events of one run."""

    def __init__(
        self, counter: TokenCounter, strategy: Strategy, conv: Conversation,
        facts: Sequence[Fact] = (),
    ) -> None:
        self.counter = counter
        #: The workload's planted facts (how many a model-written summary names).
        self.facts = list(facts)
        self.strategy = strategy
        self.conv = conv
        self.calls: list[CallRecord] = []
        self.turns: list[TurnRecord] = []
        self.compactions: list[CompactionStat] = []
        self.prunes: list[PruneStat] = []
        self.failures = 0
        self.notices: list[str] = []
        self.phase: Phase = "workload"
        self.turn = 0
        self._seen = 0
        self._drops_seen = 0
        self._turn_start = 0.0
        self._first_delta: float | None = None
        self._turn_calls = 0
        self._turn_overflow = False
        self._turn_error: str | None = None
        self.turn_text: list[str] = []
        #: The first chat prompt of the current turn (its messages' text).
        self.first_prompt: str | None = None
        #: Tokens of summaries written since the last chat call (text shown for the first
        #: time, not evaluated again).
        self._fresh = 0
        #: The messages of the last chat call's prompt.
        self.prompt_messages: list[dict[str, Any]] = []

    # -- turns ------------------------------------------------------------------------
    def begin_turn(self) -> None:
        self.turn += 1
        self._turn_start = time.perf_counter()
        self._first_delta = None
        self._turn_calls = 0
        self._turn_overflow = False
        self._turn_error = None
        self.turn_text = []
        self.first_prompt = None

    def end_turn(self) -> TurnRecord:
        wall = time.perf_counter() - self._turn_start
        ttft = None if self._first_delta is None else self._first_delta - self._turn_start
        rec = TurnRecord(
            self.turn, self.phase, wall, ttft, self._turn_calls, self._turn_overflow,
            self._turn_error,
        )
        self.turns.append(rec)
        self.sync_drops()
        return rec

    # -- model calls ------------------------------------------------------------------
    def call_kind(self) -> CallKind:
        return "summary" if self.strategy.clock.in_summary else "chat"

    def _chat_extras(self, rec: CallRecord, prompt_tokens: int) -> None:
        timing = self.strategy.manager.pending
        self.strategy.manager.pending = None
        if timing is not None:
            rec.policy_cpu_s = timing.cpu_s
            rec.policy_wall_s = timing.wall_s
        if rec.phase == "workload":
            new = self.conv.messages[self._seen :]
            if self._seen == 0:
                rec.new_tokens = rec.fresh_tokens = prompt_tokens
            else:
                rec.new_tokens = sum(self.counter.unpruned(m) for m in new)
                # As shown: the new messages are the prompt's last ones (cut or cleared
                # as the prompt shows them), plus any summary written since the last call.
                shown = self.prompt_messages[-len(new):] if new else []
                if len(shown) >= len(self.prompt_messages):
                    shown = shown[1:]  # never the system prompt
                rec.fresh_tokens = self._fresh + sum(self.counter.segment(m) for m in shown)
            self._seen = len(self.conv.messages)
        self._fresh = 0
        self._turn_calls += 1

    def call_finished(self, kind: CallKind, result: GenerationResult) -> None:
        rec = CallRecord(
            index=len(self.calls) + 1, turn=self.turn, phase=self.phase, kind=kind,
            prompt_tokens=result.prompt_tokens, evaluated=result.prompt_evaluated,
            reused=result.prompt_reused, completion_tokens=result.completion_tokens,
            prefill_s=result.prefill_s, generate_s=result.generate_s,
            first_token_s=result.first_token_s, shifted=result.prompt_shifted,
        )
        if kind == "chat":
            self._chat_extras(rec, result.prompt_tokens)
        self.calls.append(rec)

    def call_started(self, kind: CallKind, messages: Sequence[dict[str, Any]]) -> None:
        if kind == "chat" and self.first_prompt is None:
            self.first_prompt = _prompt_text(messages)
        if kind == "chat":
            self.prompt_messages = list(messages)

    def call_overflowed(self, kind: CallKind, prompt_tokens: int) -> None:
        rec = CallRecord(
            index=len(self.calls) + 1, turn=self.turn, phase=self.phase, kind=kind,
            prompt_tokens=prompt_tokens, overflowed=True,
        )
        if kind == "chat":
            self._chat_extras(rec, prompt_tokens)
            self._turn_overflow = True
        self.calls.append(rec)

    # -- events -----------------------------------------------------------------------
    def on_event(self, event: AgentEvent) -> None:
        if isinstance(event, AssistantDelta):
            if self._first_delta is None:
                self._first_delta = time.perf_counter()
            self.turn_text.append(event.text)
        elif isinstance(event, ContextChanged):
            inner = event.event
            if isinstance(inner, PruneEvent):
                self.prunes.append(
                    PruneStat(self.turn, len(inner.message_ids), inner.tokens_freed)
                )
            elif isinstance(inner, CompactionFinished):
                r = inner.record
                self._fresh += self.counter.text(r.summary)
                stat = CompactionStat(r.summarizer, r.reason, r.duration_s, r.tokens_before,
                                      r.tokens_after, self.turn, list(r.rejected),
                                      asked=TOO_SMALL_FOR_GRAMMAR not in r.summarizer_note)
                if r.summarizer == "model":
                    # The part the model wrote (the record after the marker is code's).
                    written = r.summary.split(MECHANICAL_MARKER)[0]
                    planted = [f.probe for f in self.facts if f.turn <= self.turn]
                    stat.facts_planted = len(planted)
                    stat.facts_in_model_part = sum(facts_in_text(written, planted))
                self.compactions.append(stat)
            elif isinstance(inner, CompactionFailed):
                self.failures += 1
                self.note(f"compaction failed ({inner.reason}): {inner.error}")
        elif isinstance(event, Notice) and event.level != "info":
            self.note(f"{event.level}: {event.text}")
        elif isinstance(event, TurnFinished) and event.error:
            self._turn_error = event.error

    def note(self, text: str) -> None:
        line = f"turn {self.turn} ({self.phase}): {text}"
        if len(self.notices) < 200:
            self.notices.append(line)

    def sync_drops(self) -> None:
        """Turn drop-half events (kept by the strategy itself) into compaction stats."""
        inner = self.strategy.inner
        if isinstance(inner, DropHalf):
            for d in inner.drops[self._drops_seen :]:
                self.compactions.append(
                    CompactionStat("drop", "threshold", d.duration_s, d.tokens_before,
                                   d.tokens_after, self.turn)
                )
            self._drops_seen = len(inner.drops)


def _prompt_text(messages: Sequence[dict[str, Any]]) -> str:
    parts: list[str] = []
    for m in messages:
        parts.append(str(m.get("content") or ""))
        for call in m.get("tool_calls") or []:
            parts.append(str(call.get("function", {}).get("arguments", "")))
    return "\n".join(parts)


def run_workload(
    backend: LLMBackend,
    workload: Workload,
    strategy_name: StrategyName,
    *,
    options: RunOptions | None = None,
    model_label: str = "",
    summarizer: SummarizerFactory | None = None,
    pairs: list[tuple[list[int], list[int]]] | None = None,
    recall: bool = False,
    window_cap: int | None = None,
) -> RunRecord:
    """Run ``workload`` with one strategy on ``backend``; returns everything recorded.
    With ``pairs``, each chat call's (cached tokens, prompt tokens) is appended to it.
    ``recall`` gives the policy the app's recall (:func:`assistant.engine.attach_recall`);
    ``window_cap`` keeps the prompts within that many tokens instead of the workload's cap
    (the app's measured effective context)."""
    opts = options or RunOptions()
    started = time.perf_counter()
    rec_backend = recording_backend(backend, window_cap or workload.window_cap)
    rec_backend.pairs = pairs
    with tempfile.TemporaryDirectory(prefix=f"bench-{workload.name}-") as tmp:
        workspace = Path(tmp)
        workload.write_workspace(workspace)
        base = Settings(
            mode=workload.mode,
            sampling=Sampling(
                temperature=opts.temperature, max_reply_tokens=opts.max_reply_tokens, seed=0
            ),
            step_limit=opts.step_limit,
            workspace=str(workspace),
        )
        strategy = build_strategy(strategy_name, rec_backend, base, summarizer=summarizer)
        settings = strategy.settings
        if recall and isinstance(strategy.inner, ContextController):
            # As the app: the history beside recall's excerpts follows compaction.recall_focus.
            attach_recall(strategy.inner, focus=recall_focus(lambda: settings))
        conv = Conversation()
        recorder = Recorder(TokenCounter(backend), strategy, conv, workload.facts)
        rec_backend.recorder = recorder
        agent = Agent(
            rec_backend, strategy.manager, ToolRegistry.default(), lambda: settings, None,
            recorder.on_event,
        )
        strategy.manager.on_event = agent.on_context_event
        # The read-ahead reads through the manager itself: untimed, as the user types.
        reader = Agent(rec_backend, strategy.inner, agent.registry, lambda: settings, None,
                       lambda _event: None)
        run = RunRecord(
            workload=workload.name, strategy=strategy_name,
            model=model_label or backend.info.name, mode=workload.mode,
            window=strategy.policy.window, policy=asdict(strategy.policy),
        )
        total = workload.chat_turns
        outputs: list[str] = []  # tool outputs since the last chat step
        for step in workload.steps:
            try:
                if isinstance(step, ChatStep):
                    if opts.read_ahead:
                        warmed = reader.read_ahead(conv, _typed(step.text))
                        run.ahead_evaluated += warmed.evaluated if warmed is not None else 0
                    recorder.begin_turn()
                    agent.chat(conv, step.text)
                    t = recorder.end_turn()
                    run.replies.append("".join(recorder.turn_text))
                    if outputs and recorder.first_prompt is not None:
                        t.follows = len(outputs)
                        t.visibility = visibility_of(outputs, recorder.first_prompt)
                    outputs = []
                    if step.answers:
                        t.answered = answer_matches("".join(recorder.turn_text), step.answers)
                    if opts.progress is not None:
                        opts.progress(
                            f"{workload.name} {strategy_name}: turn {t.turn}/{total} "
                            f"{t.wall_s:.1f}s{' OVERFLOW' if t.overflowed else ''}"
                        )
                else:
                    run.tool_mismatches += _tool_step(agent, conv, step)
                    if conv.messages and conv.messages[-1].role == "tool":
                        outputs.append(conv.messages[-1].content)
            except Exception as exc:  # record and go on: one failure must not end the bench
                log.exception("bench step failed")
                recorder.note(f"step failed: {type(exc).__name__}: {exc}")
        recorder.sync_drops()
        chat_calls = [c for c in recorder.calls if c.kind == "chat"]
        run.final_overflowed = bool(chat_calls) and chat_calls[-1].overflowed
        last = strategy.manager.last
        final_text = "" if last is None or run.final_overflowed else _prompt_text(last.messages)
        seen = facts_in_text(final_text, [f.probe for f in workload.facts])
        run.facts = [
            FactResult(f.kind, f.text, present) for f, present in zip(workload.facts, seen,
                                                                    strict=True)
        ]
        if opts.ask_questions and workload.facts:
            recorder.phase = "probe"
            settings.sampling.max_reply_tokens = max(16, opts.probe_reply_tokens)
            kinds_asked: set[str] = set()
            for fact, result in zip(workload.facts, run.facts, strict=True):
                if opts.one_question_per_kind:
                    if fact.kind in kinds_asked:
                        continue  # not asked: answered stays None
                    kinds_asked.add(fact.kind)
                recorder.begin_turn()
                try:
                    agent.chat(conv, fact.question)
                except Exception as exc:
                    log.exception("bench question failed")
                    recorder.note(f"question failed: {type(exc).__name__}: {exc}")
                recorder.end_turn()
                reply = "".join(recorder.turn_text)
                result.reply = reply[:300]
                result.answered = answer_matches(reply, fact.answers)
        run.calls = recorder.calls
        run.turns = recorder.turns
        run.compactions = recorder.compactions
        run.prunes = recorder.prunes
        run.compaction_failures = recorder.failures
        run.notices = recorder.notices
    run.peak_rss_mb = peak_rss_mb()
    run.wall_s = time.perf_counter() - started
    return run


def _typed(text: str) -> str:
    """``text`` less its last word: what the user has typed a word before sending."""
    words = text.rstrip().rsplit(maxsplit=1)
    return words[0].rstrip() if len(words) > 1 else ""


def _tool_step(agent: Agent, conv: Conversation, step: ToolStep) -> int:
    """Run or append one user-initiated tool call; returns 1 if a live result differed."""
    if step.live:
        msg = agent.run_tool_command(conv, step.tool, dict(step.arguments))
        return int(msg is not None and msg.content != step.result)
    call = ToolCall(id=step.call_id, name=step.tool, arguments=dict(step.arguments))
    conv.append(Message(role="assistant", tool_calls=[call], initiated_by="user"))
    conv.append(
        Message(
            role="tool", content=step.result, tool_call_id=call.id, name=step.tool,
            is_error=step.is_error, initiated_by="user",
        )
    )
    return 0
