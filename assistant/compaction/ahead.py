"""Compaction ahead of time: the summary the next compaction needs, written while the model
is idle, kept under a key of what it summarizes.

A compaction inside a turn makes the user wait for a whole summary (10-23 s on an idle
laptop, minutes under load). Once the chat passes :data:`AHEAD_FILL` of the point where it
must compact, the service asks the controller (``ContextController.precompute``) on the
idle worker, at low priority (the user's next message cancels it at once), to plan the
compaction the chat would get now and write its summary. When the threshold comes, the
compactor prefers that plan's cut when it is still a good one (:func:`~.cut_point.find_cut`
``prefer``), and the summary is used at once when its :func:`summary_key` is unchanged:
the span's first and last message ids, every id in it, the text of the span, and the other
summarizer inputs (the previous summary, the focus, the model part's budget, the window).
A summary is never reused for a span that changed in any way.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from assistant.compaction.summary import SummaryOutcome, SummaryRequest
from assistant.conversation import Message

#: Share of the compaction threshold (window - reserve) past which the next compaction's
#: summary is written ahead of time.
AHEAD_FILL = 0.7


def summary_key(request: SummaryRequest) -> str:
    """What a summary depends on (see the module docstring), as a short digest."""
    span: Sequence[Message] = [*request.history, *request.turn_prefix]
    body = {
        "first": span[0].id if span else None,
        "last": span[-1].id if span else None,
        "ids": [m.id for m in span],
        "split": len(request.history),
        "text": hashlib.sha256(
            "\x00".join(
                f"{m.role}\x01{m.content}\x01{m.tool_call_id or ''}\x01"
                + ",".join(f"{c.name}:{json.dumps(c.arguments, sort_keys=True)}"
                           for c in m.tool_calls)
                for m in span
            ).encode("utf-8")
        ).hexdigest(),
        "previous": request.previous,
        "focus": request.focus,
        "budget": request.budget,
        "window": request.window,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Precomputed:
    """A summary written ahead of time, and the cut it was planned for."""

    key: str
    #: Id of the first message the plan kept verbatim (the compactor prefers that cut).
    first_kept_id: str
    outcome: SummaryOutcome
    seconds: float


class SummaryCache:
    """The summaries written ahead of time (the newest few; thread-safe)."""

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._items: list[Precomputed] = []
        #: How many compactions used a precomputed summary, and how many could not.
        self.hits = 0
        self.misses = 0

    def put(self, item: Precomputed) -> None:
        with self._lock:
            self._items = [i for i in self._items if i.key != item.key][-(self._size - 1):]
            self._items.append(item)

    def get(self, key: str) -> Precomputed | None:
        with self._lock:
            return next((i for i in self._items if i.key == key), None)

    def preferred_cuts(self) -> list[str]:
        """First kept ids of the plans summaries were written for, newest first."""
        with self._lock:
            return [i.first_kept_id for i in reversed(self._items)]

    def take(self, key: str) -> SummaryOutcome | None:
        """The summary for ``key`` (counted as a hit), or None (a miss)."""
        got = self.get(key)
        with self._lock:
            if got is None:
                self.misses += 1
                return None
            self.hits += 1
        return got.outcome

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
