"""The five context strategies compared by the benchmark.

All of them implement the agent's :class:`~assistant.agent.controller_api.ContextManager`
protocol (``prepare`` before every model call, ``compact`` for ``/compact`` and overflow), so
the same :class:`~assistant.agent.loop.Agent` loop drives each one.

=================  ===========================================================================
``policy``         (a) this project: :class:`ContextController` with the mode's
                   :class:`EffectivePolicy` (prune before every call, summarize when
                   ``prompt + reserve > window``, compact and retry once on overflow).
``summarize-only`` (b) pi-mono: the same controller with pruning off and pi-mono's
                   thresholds (reserve 16,384, keep recent 20,000, summary 13,107 for a
                   131,072 window) scaled to the model's window the way
                   :meth:`ModePolicy.effective` scales.
``prune-only``     (c) OpenCode/tunacode layer 1 alone: protect/minimum pruning, never a
                   summary; a call that still does not fit overflows.
``drop-half``      (d) GPT4All / llama.cpp context shift: when ``prompt + reserve > window``
                   drop the oldest half of the conversation (by tokens; the system prompt
                   stays), repeatedly if needed.
``none``           (e) no management: the whole conversation every time; overflow is an error.
=================  ===========================================================================

:func:`build_strategy` wires one up. :class:`TimedManager` wraps any of them to measure the
policy's own time per call, and :class:`TimedSummarizer` measures the summarizer so that
its model time can be subtracted.

The answer benchmark (:mod:`bench.answers`) runs the policy with a chosen summarizer:
:data:`ANSWER_STRATEGIES` names those variants (``model-summary``: the model writes the
summary and the code's record follows it; ``record``: the code-written record alone) and
:func:`summarizer_factory` builds the summarizer a variant asks for; each also comes
``+recall``, with the app's recall at question time (excerpts of the whole history beside
the question: :func:`answer_controller`); ``rolling-window`` is the desktop apps' baseline
(:mod:`bench.rolling`). About 500 lines: the five strategies are kept side by side.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from assistant.agent.controller_api import CompactReason, ContextManager
from assistant.compaction import context
from assistant.compaction.controller import (
    ContextController,
    ContextTooLargeError,
    MessageFit,
    PreparedRequest,
)
from assistant.compaction.events import ContextEvent
from assistant.compaction.request import CallRequest
from assistant.compaction.summary import (
    ExtractiveSummarizer,
    ModelSummarizer,
    Summarizer,
    SummaryOutcome,
    SummaryRequest,
)
from assistant.compaction.tokens import TokenCounter
from assistant.config import EffectivePolicy, Mode, ModePolicy, Settings
from assistant.conversation import CompactionRecord, Conversation, Message
from assistant.engine import attach_recall, recall_focus
from assistant.llm.base import CancelToken, LLMBackend, PromptCounter

StrategyName = Literal[
    "policy", "summarize-only", "prune-only", "drop-half", "none", "front-cut"
]
STRATEGY_NAMES: tuple[StrategyName, ...] = (
    "policy", "summarize-only", "prune-only", "drop-half", "none",
)
LABELS: dict[StrategyName, str] = {
    "policy": "(a) policy",
    "summarize-only": "(b) summarize only",
    "prune-only": "(c) prune only",
    "drop-half": "(d) drop half",
    "none": "(e) none",
    # Not one of the five: the chat front ends' way (bench/side_by_side.py runs it).
    "front-cut": "front cut",
}
_ALIASES: dict[str, StrategyName] = {
    "a": "policy", "b": "summarize-only", "c": "prune-only", "d": "drop-half", "e": "none",
    "summarize": "summarize-only", "pi-mono": "summarize-only", "prune": "prune-only",
    "drop": "drop-half", "shift": "drop-half", "no-management": "none",
}

#: pi-mono's thresholds and the window they are stated for (a 131,072-token model).
PI_WINDOW = 131_072
PI_RESERVE = 16_384
PI_KEEP_RECENT = 20_000
PI_SUMMARY_BUDGET = 13_107  # 0.8 x reserve, pi-mono's summary max tokens


def canonical_strategy(name: str) -> StrategyName:
    key = name.strip().lower()
    for known in STRATEGY_NAMES:
        if key == known:
            return known
    if key in _ALIASES:
        return _ALIASES[key]
    raise ValueError(f"unknown strategy {name!r}; use one of {', '.join(STRATEGY_NAMES)}")


def pimono_policy(mode: Mode, window: int) -> EffectivePolicy:
    """pi-mono's thresholds scaled to ``window`` in proportion (:meth:`ModePolicy.effective`
    as in local mode: standard mode's least kept share is this app's rule, not pi-mono's)."""
    base = ModePolicy(
        window=PI_WINDOW, protect=0, minimum=0, reserve=PI_RESERVE,
        keep_recent=PI_KEEP_RECENT, summary_budget=PI_SUMMARY_BUDGET,
    )
    return replace(base.effective(Mode.LOCAL, window), mode=mode)


# -- timing wrappers -------------------------------------------------------------------------


@dataclass
class Clock:
    """Time spent inside the summarizer (its model calls included), accumulated."""

    summary_cpu: float = 0.0
    summary_wall: float = 0.0
    in_summary: bool = False


class TimedSummarizer:
    """Wraps a summarizer: marks its model calls and adds its time to ``clock``."""

    def __init__(self, inner: Summarizer, clock: Clock) -> None:
        self.inner = inner
        self.clock = clock

    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        cpu, wall = time.thread_time(), time.perf_counter()
        self.clock.in_summary = True
        try:
            return self.inner.summarize(request, cancel)
        finally:
            self.clock.in_summary = False
            self.clock.summary_cpu += time.thread_time() - cpu
            self.clock.summary_wall += time.perf_counter() - wall


@dataclass
class PolicyTiming:
    """One ``prepare``: its time without the summarizer's, and what it returned."""

    cpu_s: float
    wall_s: float
    summary_wall_s: float
    prompt_tokens: int


class TimedManager:
    """A :class:`ContextManager` that times ``prepare`` of the one it wraps.

    Policy time = time in ``prepare`` minus time in the summarizer (CPU time of this thread,
    ``time.thread_time``, so llama.cpp's worker threads are never counted; and wall time).
    """

    def __init__(self, inner: ContextManager, clock: Clock) -> None:
        self.inner = inner
        self.clock = clock
        self.timings: list[PolicyTiming] = []
        self.last: PreparedRequest | None = None
        #: Set after each prepare, taken (and cleared) by the recorder at the model call.
        self.pending: PolicyTiming | None = None

    @property
    def policy(self) -> Callable[[], EffectivePolicy]:
        return self.inner.policy

    @property
    def on_event(self) -> Callable[[ContextEvent], None] | None:
        return self.inner.on_event

    @on_event.setter
    def on_event(self, value: Callable[[ContextEvent], None] | None) -> None:
        self.inner.on_event = value

    def message_fit(self, call: CallRequest, text: str) -> MessageFit:
        return self.inner.message_fit(call, text)

    def prepare(self, call: CallRequest) -> PreparedRequest:
        return self._timed(lambda: self.inner.prepare(call))

    def handle_overflow(self, call: CallRequest) -> PreparedRequest:
        """The retry request after an overflow (timed like ``prepare``)."""
        return self._timed(lambda: self.inner.handle_overflow(call))

    def _timed(self, fn: Callable[[], PreparedRequest]) -> PreparedRequest:
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        s_cpu0, s_wall0 = self.clock.summary_cpu, self.clock.summary_wall
        req = fn()
        s_cpu = self.clock.summary_cpu - s_cpu0
        s_wall = self.clock.summary_wall - s_wall0
        timing = PolicyTiming(
            cpu_s=max(time.thread_time() - cpu0 - s_cpu, 0.0),
            wall_s=max(time.perf_counter() - wall0 - s_wall, 0.0),
            summary_wall_s=s_wall,
            prompt_tokens=req.prompt_tokens,
        )
        self.timings.append(timing)
        self.pending = timing
        self.last = req
        return req

    def compact(self, call: CallRequest, reason: CompactReason) -> CompactionRecord | None:
        return self.inner.compact(call, reason)


# -- (d) and (e) -----------------------------------------------------------------------------


@dataclass
class Drop:
    """One drop-half event."""

    tokens_before: int
    tokens_after: int
    messages_dropped: int
    duration_s: float


@dataclass
class _Baseline:
    """Shared parts of the strategies that build the prompt themselves."""

    backend: PromptCounter
    policy: Callable[[], EffectivePolicy]
    on_event: Callable[[ContextEvent], None] | None = None
    counter: TokenCounter = field(init=False)

    def __post_init__(self) -> None:
        self.counter = TokenCounter(self.backend)

    def message_fit(self, call: CallRequest, text: str) -> MessageFit:
        """Baselines send what they are given (they refuse nothing the window could hold)."""
        pol = self.policy()
        size = self.counter.message(Message(role="user", content=text))
        return MessageFit(size, pol.window)

    def _request(
        self,
        system_prompt: str,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
    ) -> PreparedRequest:
        pol = self.policy()
        built = [context.system_message(system_prompt), *messages]
        msgs = context.to_openai(built)
        n = self.counter.exact(msgs, tools)
        return PreparedRequest(
            messages=msgs, prompt_tokens=n, window=pol.window,
            reserve=min(pol.reserve, max(pol.window - n, 0)),
        )


class NoManagement(_Baseline):
    """(e) The whole conversation, every call. ``compact`` never does anything."""

    def prepare(self, call: CallRequest) -> PreparedRequest:
        return self._request(call.system_prompt, call.conv.messages, call.tools)

    def compact(self, call: CallRequest, reason: CompactReason) -> CompactionRecord | None:
        return None

    def handle_overflow(self, call: CallRequest) -> PreparedRequest:
        raise ContextTooLargeError("no context management")


class DropHalf(_Baseline):
    """(d) Drop the oldest half of the conversation when the window is full.

    "Full" is ``prompt + reserve > window`` (GPT4All's test before a reply; llama.cpp's
    context shift fires one token later). The cut is the first message boundary at which at
    least half of the conversation's tokens are dropped; tool results are never left without
    their call. The cut is remembered by message id (so a copy of the conversation keeps it),
    and nothing is summarized. Unlike llama.cpp's in-place KV shift, the kept half is
    re-evaluated here (the app has no KV shift); the content lost is the same.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self.first_kept_id: str | None = None
        self.drops: list[Drop] = []

    def _kept(self, conv: Conversation) -> list[Message]:
        if self.first_kept_id is None:
            return list(conv.messages)
        for i, m in enumerate(conv.messages):
            if m.id == self.first_kept_id:
                return conv.messages[i:]
        return list(conv.messages)

    def _drop_half(self, kept: list[Message]) -> int:
        """Index into ``kept`` of the first message to keep after dropping half."""
        sizes = [self.counter.message(m) for m in kept]
        half = sum(sizes) / 2
        acc = 0
        cut = len(kept) - 1
        for i, size in enumerate(sizes):
            acc += size
            if acc >= half:
                cut = i + 1
                break
        cut = min(cut, len(kept) - 1)  # always keep the newest message
        while 0 < cut < len(kept) - 1 and kept[cut].role == "tool":
            cut += 1  # a tool result must not lose its call
        return max(cut, 1) if len(kept) > 1 else 0

    def _shrink(self, call: CallRequest, once: bool) -> PreparedRequest:
        pol = self.policy()
        system_prompt, tools = call.system_prompt, call.tools
        kept = self._kept(call.conv)
        req = self._request(system_prompt, kept, tools)
        while (once or req.prompt_tokens + pol.reserve > pol.window) and len(kept) > 1:
            started = time.perf_counter()
            cut = self._drop_half(kept)
            if cut <= 0:
                break
            before = req.prompt_tokens
            kept = kept[cut:]
            self.first_kept_id = kept[0].id
            req = self._request(system_prompt, kept, tools)
            self.drops.append(
                Drop(before, req.prompt_tokens, cut, time.perf_counter() - started)
            )
            if once:
                break
        return req

    def prepare(self, call: CallRequest) -> PreparedRequest:
        return self._shrink(call, once=False)

    def compact(self, call: CallRequest, reason: CompactReason) -> CompactionRecord | None:
        """Drop half once more. The record is returned (so the agent retries) but never
        stored in the conversation: this strategy writes no summary."""
        before = len(self.drops)
        self._shrink(call, once=True)
        if len(self.drops) == before:
            return None
        drop = self.drops[-1]
        return CompactionRecord(
            summary="", first_kept_id=self.first_kept_id, tokens_before=drop.tokens_before,
            tokens_after=drop.tokens_after, reason=reason, count=len(self.drops),
            summarizer="extractive",
        )

    def handle_overflow(self, call: CallRequest) -> PreparedRequest:
        """Drop half once more and return the smaller request (what a context shift does
        when the model runs out of room)."""
        before = len(self.drops)
        req = self._shrink(call, once=True)
        if len(self.drops) == before:
            raise ContextTooLargeError("nothing left to drop")
        return req


class FrontCut(DropHalf):
    """What chat front ends on ``llama-server`` do (Open WebUI, LM Studio's rolling window):
    send the whole history and, when ``prompt + reserve > window``, cut the oldest messages,
    one at a time, until it fits (the system prompt stays; a tool result never loses its
    call). Not one of the five strategies: :mod:`bench.side_by_side` runs it against
    ``llama-server --cache-reuse``, which keeps the cached text after the cut."""

    def _drop_half(self, kept: list[Message]) -> int:
        cut = 1
        while cut < len(kept) - 1 and kept[cut].role == "tool":
            cut += 1
        return cut if len(kept) > 1 else 0


# -- wiring ----------------------------------------------------------------------------------


@dataclass
class Strategy:
    """One strategy ready to run: the manager the agent gets and the settings it uses."""

    name: StrategyName
    manager: TimedManager
    policy: EffectivePolicy
    settings: Settings
    clock: Clock
    #: The unwrapped manager (for strategy-specific records such as drops).
    inner: ContextManager


def strategy_settings(name: StrategyName, base: Settings) -> Settings:
    """``base`` with the compaction switches the strategy implies (the agent reads them)."""
    s = base.model_copy(deep=True)
    summarizes = name in ("policy", "summarize-only")
    s.compaction.prune = name in ("policy", "prune-only")
    s.compaction.auto_compact = summarizes
    s.compaction.compact_on_overflow = summarizes or name in ("drop-half", "front-cut")
    return s


#: Answer-benchmark variants: name -> (strategy, summarizer kind). The ``+recall`` ones add
#: recall at question time exactly as the app wires it (:func:`answer_controller`);
#: ``model-summary+recall`` is the configuration the app ships.
AnswerStrategy = Literal[
    "model-summary", "record", "model-summary+recall", "record+recall",
    "record+recall+notes", "rolling-window"]
ANSWER_STRATEGIES: dict[AnswerStrategy, tuple[StrategyName, Literal["model", "extractive"]]] = {
    "model-summary+recall": ("policy", "model"),
    "model-summary": ("policy", "model"),
    "record": ("policy", "extractive"),
    "record+recall": ("policy", "extractive"),
    # earlier turns written as notes (compaction.earlier_as_notes, on in the app)
    "record+recall+notes": ("policy", "extractive"),
}
#: The app's variants, then the rolling window (every suite run asks it).
ANSWER_VARIANTS: tuple[AnswerStrategy, ...] = (*ANSWER_STRATEGIES, "rolling-window")
#: The variants a run asks when none is named.
DEFAULT_ANSWER_STRATEGIES: tuple[AnswerStrategy, ...] = (
    "model-summary+recall", "model-summary", "record", "record+recall", "rolling-window",
)


def uses_recall(variant: AnswerStrategy) -> bool:
    return "+recall" in variant


def answer_controller(
    variant: AnswerStrategy, backend: PromptCounter, settings: Settings
) -> ContextController:
    """The policy's controller for answer variant ``variant`` on ``backend``: its summarizer,
    and for a ``+recall`` variant the app's recall (:func:`assistant.engine.attach_recall`,
    the same wiring the app's engine uses, with an in-memory index of the conversation)."""
    name, kind = ANSWER_STRATEGIES[variant]
    built = build_strategy(name, backend, settings, summarizer=summarizer_factory(kind))
    inner = built.inner
    assert isinstance(inner, ContextController)
    if uses_recall(variant):
        attach_recall(inner, focus=recall_focus(lambda: settings))
    switches = inner.switches().model_copy(
        update={"recall": uses_recall(variant), "earlier_as_notes": variant.endswith("+notes")})
    inner.switches = lambda: switches
    return inner


def summarizer_factory(
    kind: Literal["model", "extractive"],
) -> Callable[[PromptCounter, TokenCounter], Summarizer]:
    """The summarizer ``kind`` names, built for a strategy's backend: ``model`` needs a
    backend that generates (else it falls back to the record, as the app does)."""

    def make(backend: PromptCounter, counter: TokenCounter) -> Summarizer:
        if kind == "model" and isinstance(backend, LLMBackend):
            return ModelSummarizer(backend, counter)
        return ExtractiveSummarizer(counter)

    return make


def _default_summarizer(backend: PromptCounter, counter: TokenCounter) -> Summarizer:
    if isinstance(backend, LLMBackend):
        return ModelSummarizer(backend, counter)
    return ExtractiveSummarizer(counter)


def build_strategy(
    name: StrategyName,
    backend: PromptCounter,
    base_settings: Settings,
    *,
    summarizer: Callable[[PromptCounter, TokenCounter], Summarizer] | None = None,
) -> Strategy:
    """Wire strategy ``name`` for ``backend`` (the backend the agent will call, or only a
    prompt counter when nothing is generated, as for replays).

    ``summarizer`` builds the summarizer (default: the model summarizer on ``backend`` when
    it can generate, else the extractive one).
    """
    settings = strategy_settings(name, base_settings)
    own = settings.effective_policy(backend.info.trained_context)
    policy = pimono_policy(settings.mode, own.window) if name == "summarize-only" else own
    clock = Clock()
    inner: ContextManager
    if name in ("policy", "summarize-only", "prune-only"):
        counter = TokenCounter(backend)
        made = (summarizer or _default_summarizer)(backend, counter)
        summarizes = name != "prune-only"
        switched = {"prune": name != "summarize-only", "auto_compact": summarizes,
                    "compact_on_overflow": summarizes, "recall": True}
        inner = ContextController(
            backend,
            lambda: policy,
            switches=lambda: settings.switches().model_copy(update=switched),
            summarizer=TimedSummarizer(made, clock), counter=counter,
        )
    elif name == "drop-half":
        inner = DropHalf(backend, lambda: policy)
    elif name == "front-cut":
        inner = FrontCut(backend, lambda: policy)
    else:
        inner = NoManagement(backend, lambda: policy)
    return Strategy(name, TimedManager(inner, clock), policy, settings, clock, inner)
