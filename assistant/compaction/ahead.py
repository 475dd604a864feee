"""Compaction ahead of time: the summary the next compaction needs, written while the model
is idle, kept under a key of what it summarizes (docs/COMPACTION.md)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assistant.compaction.summary import SummaryOutcome, SummaryRequest
from assistant.conversation import Message
from assistant.textsafe import digest

#: Share of the compaction threshold (window - reserve) past which the next compaction's
#: summary is written ahead of time.
AHEAD_FILL = 0.7
#: Share of the window a tail may pass its limit by at the cut a summary was written ahead
#: for (half of ``budget.GROWTH_SHARE``: the next compaction comes sooner, this one is free).
PREFER_SLACK = 0.06
#: A summary written for the start of the span is used only when it covers at least this
#: share of the span's messages (the rest is in the verbatim record only).
MIN_COVERED = 0.5


def span_digests(span: Sequence[Message]) -> tuple[str, ...]:
    """Each message as a summary depends on it: id, role, text, tool call id and calls."""
    out = []
    for m in span:
        calls = ",".join(f"{c.name}:{json.dumps(c.arguments, sort_keys=True)}"
                         for c in m.tool_calls)
        text = f"{m.id}\x00{m.role}\x00{m.content}\x00{m.tool_call_id or ''}\x00{calls}"
        out.append(digest(text))  # a lone surrogate in a stored message is hashed too
    return tuple(out)


def context_key(request: SummaryRequest) -> str:
    """The summarizer's inputs besides the span and the budget, as a short digest."""
    body = {"previous": request.previous, "focus": request.focus, "window": request.window}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()[:24]


#: What a summary depends on: the span's digests, where its history ends, the context, the budget.
SummaryKey = tuple[tuple[str, ...], int, str, int]


def summary_key(request: SummaryRequest) -> SummaryKey:
    """What a summary depends on (docs/COMPACTION.md)."""
    span = span_digests([*request.history, *request.turn_prefix])
    return span, len(request.history), context_key(request), request.budget


@dataclass(frozen=True)
class Precomputed:
    """A summary written ahead of time, and the cut it was planned for."""

    key: SummaryKey
    #: Id of the first message the plan kept verbatim (the compactor prefers that cut).
    first_kept_id: str
    outcome: SummaryOutcome
    seconds: float
    #: :func:`span_digests` of the messages it summarizes, in order.
    span: tuple[str, ...] = ()
    #: :func:`context_key` of its request, and the model part's budget it was written for.
    context: str = ""
    budget: int = 0

    @classmethod
    def of(cls, request: SummaryRequest, first_kept_id: str, outcome: SummaryOutcome,
           seconds: float) -> Precomputed:
        key = summary_key(request)
        return cls(key, first_kept_id, outcome, seconds, key[0], key[2], key[3])


@dataclass(frozen=True)
class Reuse:
    """A summary written ahead, used for a compaction's span (or the start of it)."""

    outcome: SummaryOutcome
    #: Messages of the span it was written for, and messages the compaction summarizes.
    covered: int
    span: int

    @property
    def whole(self) -> bool:
        return self.covered == self.span


class SummaryCache:
    """The summaries written ahead of time (the newest few; thread-safe)."""

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._items: list[Precomputed] = []

    def put(self, item: Precomputed) -> None:
        with self._lock:
            self._items = [i for i in self._items if i.key != item.key][-(self._size - 1):]
            self._items.append(item)

    def newest(self) -> Precomputed | None:
        """The summary written ahead most recently (None: none is kept)."""
        with self._lock:
            return self._items[-1] if self._items else None

    def items(self) -> list[Precomputed]:
        """The summaries kept, oldest first."""
        with self._lock:
            return list(self._items)

    def get(self, key: SummaryKey) -> Precomputed | None:
        with self._lock:
            return next((i for i in self._items if i.key == key), None)

    def preferred_cuts(self, kept: Sequence[Message]) -> list[int]:
        """Cuts in ``kept`` that summaries were written for, newest first, where the
        messages before the cut are exactly the ones summarized."""
        where = {m.id: i for i, m in enumerate(kept)}
        with self._lock:
            items = list(reversed(self._items))
        cuts: list[int] = []
        digests: tuple[str, ...] | None = None
        for item in items:
            at = where.get(item.first_kept_id)
            if at is None or len(item.span) != at:
                continue
            if digests is None:
                digests = span_digests(kept)
            if digests[:at] == item.span:
                cuts.append(at)
        return cuts

    def take(self, request: SummaryRequest, fits: Callable[[str], bool]) -> Reuse | None:
        """A summary for ``request``'s span or the longest start of it (at least
        :data:`MIN_COVERED`), with the same :func:`context_key`, that ``fits``; or None."""
        span = span_digests([*request.history, *request.turn_prefix])
        context = context_key(request)
        with self._lock:
            items = list(reversed(self._items))
        best: Precomputed | None = None
        for item in items:
            n = len(item.span)
            if (item.context != context or not n or n > len(span) or span[:n] != item.span
                    or n < MIN_COVERED * len(span)):
                continue
            if best is not None and len(best.span) >= n:
                continue
            if item.budget > request.budget and not fits(item.outcome.text):
                continue
            best = item
        return None if best is None else Reuse(best.outcome, len(best.span), len(span))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
