"""Prompt progress (speed, time left) and the last reply's figures, computed once from the
agent's events for both faces."""

from __future__ import annotations

import time
from collections.abc import Callable

from assistant.agent.events import ContextUsage, PromptProgress
from assistant.agent.usage import figures_of
from assistant.conversation import ReplyFigures
from assistant.llm.base import GenerationResult
from assistant.service.events import PrefillProgress, ReplyStats

#: Speeds measured over less time than this are not trusted for an estimate.
MIN_MEASURE_S = 0.2


class PrefillTracker:
    """Follows one prompt evaluation at a time (the worker thread calls it). Until this
    evaluation has run long enough to measure, the time left comes from the known speed:
    the last evaluation's, or the calibration's (``known_speed``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 known_speed: Callable[[], float | None] = lambda: None) -> None:
        self._clock = clock
        self._start: tuple[float, int] | None = None
        self._known_speed = known_speed
        #: Prompt tokens per second of the last model call that evaluated any.
        self.last_speed: float | None = None

    def observed(self, result: GenerationResult) -> None:
        """A model call ended: its prompt's reading speed, when read long enough to trust."""
        if result.prefill_s >= MIN_MEASURE_S and result.prefill_tokens_per_s:
            self.last_speed = result.prefill_tokens_per_s

    def _estimate(self, event: PromptProgress) -> PrefillProgress:
        speed = self.last_speed or self._known_speed()
        if not speed:
            return PrefillProgress(event.done, event.total)
        return PrefillProgress(event.done, event.total, tokens_per_s=speed,
                               eta_s=(event.total - event.done) / speed)

    def prompt_ready(self, _usage: ContextUsage | None = None) -> None:
        self._start = None

    def progress(self, event: PromptProgress) -> PrefillProgress:
        now = self._clock()
        if self._start is None or event.done < self._start[1]:
            self._start = (now, event.done)
            return self._estimate(event)
        started, first = self._start
        elapsed = now - started
        evaluated = event.done - first
        if elapsed < MIN_MEASURE_S or evaluated <= 0:
            return self._estimate(event)
        rate = evaluated / elapsed
        return PrefillProgress(
            event.done, event.total, tokens_per_s=rate, eta_s=(event.total - event.done) / rate
        )


def reply_stats(result: GenerationResult, ttft_s: float | None = None) -> ReplyStats:
    """The figures of one model call; ``ttft_s``: the agent's, by default the backend's."""
    figures = figures_of(result, ttft_s)
    return ReplyStats(**figures.model_dump(), prefill_tokens_per_s=result.prefill_tokens_per_s)


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def stats_line(stats: ReplyStats) -> str:
    """``[stats] prompt_tokens=N evaluated=E reused=R ttft_s=T tokens_per_s=S``."""
    return (
        f"[stats] prompt_tokens={stats.prompt_tokens} evaluated={stats.evaluated} "
        f"reused={stats.reused} ttft_s={_num(stats.ttft_s, 2)} "
        f"tokens_per_s={_num(stats.tokens_per_s, 1)}"
    )


def eta_text(seconds: float) -> str:
    """"about 40 s left", "about 3 min left"."""
    if seconds < 1:
        return "almost done"
    if seconds < 90:
        return f"about {max(1, round(seconds))} s left"
    return f"about {round(seconds / 60)} min left"


def stats_text(stats: ReplyFigures) -> str:
    """One line for a message footer: what the reply cost and how fast it came."""
    parts: list[str] = []
    if stats.ttft_s is not None:
        parts.append(f"{stats.ttft_s:.1f} s to first token")
    if stats.tokens_per_s is not None:
        parts.append(f"{stats.tokens_per_s:.1f} tokens/s")
    prompt = f"prompt {stats.prompt_tokens:,} tokens"
    if stats.reused:
        prompt += f" ({stats.reused:,} from cache)"
    parts.append(prompt)
    return " · ".join(parts)
