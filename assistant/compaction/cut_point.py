"""Where to cut: which tail of the chat stays verbatim, which head is summarized.

Rule (pi-mono's, with real token counts and a hard limit):

1. Walk back from the newest visible message adding its exact segment tokens; the tail may
   hold at most ``keep`` tokens (``keep_recent``, lowered by the controller when the window
   has less room). ``start`` is the oldest index whose tail still fits.
2. Snap forward to a *valid* cut at or after ``start``. A cut at ``i`` (the kept tail starts
   with message ``i``) is valid when message ``i`` is a user (or system) message, or an
   assistant message that was not stopped, and no tool call before ``i`` has its result at
   or after ``i`` (a call and its results are never separated). Cutting at the very end
   (``i == len``: summarize everything) is always valid. Turn boundaries (user messages)
   are preferred: an assistant message is used only when ``start`` lies inside the last
   turn, i.e. that single turn is larger than ``keep``.
3. If snapping forward reached the end, look back instead for the nearest valid cut whose
   tail still fits ``limit`` (the room the window really has); keeping recent messages
   verbatim beats summarizing them. Otherwise everything is summarized.
4. A cut at an assistant message in the middle of a turn *splits* that turn: the turn's
   prefix (its user message up to the cut) is summarized separately and merged into the
   summary, so the user's request is never lost between the two halves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assistant.conversation import Message


@dataclass(frozen=True)
class CutPlan:
    """Indices into the visible messages the plan was made for."""

    cut: int
    #: Index of the user message starting the split turn, or None when no turn is split.
    turn_start: int | None
    kept_tokens: int
    total: int

    @property
    def history_end(self) -> int:
        """Messages ``[0, history_end)`` go to the history summary."""
        return self.turn_start if self.turn_start is not None else self.cut

    @property
    def split_turn(self) -> bool:
        return self.turn_start is not None

    @property
    def summarizes_anything(self) -> bool:
        return self.cut > 0


def blocked_cuts(messages: Sequence[Message]) -> list[bool]:
    """``blocked[i]`` is True when cutting before message ``i`` separates a call and result."""
    n = len(messages)
    blocked = [False] * (n + 1)
    call_at: dict[str, int] = {}
    for i, msg in enumerate(messages):
        for call in msg.tool_calls:
            call_at[call.id] = i
        if msg.role == "tool" and msg.tool_call_id in call_at:
            for j in range(call_at[msg.tool_call_id] + 1, i + 1):
                blocked[j] = True
    return blocked


def valid_cuts(messages: Sequence[Message]) -> list[bool]:
    """``valid[i]`` for ``i`` in ``0..len`` (see the module docstring)."""
    blocked = blocked_cuts(messages)
    n = len(messages)
    valid = [False] * (n + 1)
    valid[0] = True
    valid[n] = True
    for i in range(1, n):
        msg = messages[i]
        if blocked[i] or msg.stopped:
            continue
        valid[i] = msg.role in ("user", "system", "assistant")
    return valid


def find_cut(
    messages: Sequence[Message], counts: Sequence[int], *, keep: int, limit: int | None = None
) -> CutPlan:
    """Plan a cut of ``messages`` (with their segment ``counts``); see the module docstring."""
    n = len(messages)
    if len(counts) != n:
        raise ValueError("one count per message is needed")
    hard = keep if limit is None else max(limit, keep)
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + counts[i]
    start = n
    while start > 0 and suffix[start - 1] <= keep:
        start -= 1
    if start == 0:  # everything fits: nothing has to be summarized
        return CutPlan(cut=0, turn_start=None, kept_tokens=suffix[0], total=suffix[0])
    valid = valid_cuts(messages)
    turn_cut = next(
        (i for i in range(start, n) if valid[i] and messages[i].role != "assistant"), None
    )
    cut = turn_cut if turn_cut is not None else next(i for i in range(start, n + 1) if valid[i])
    if cut == n:
        back = next((i for i in range(start - 1, 0, -1) if valid[i]), None)
        if back is not None and suffix[back] <= hard:
            cut = back
    turn_start: int | None = None
    if 0 < cut < n and messages[cut].role == "assistant":
        turn_start = next((j for j in range(cut - 1, -1, -1) if messages[j].role == "user"), None)
    return CutPlan(cut=cut, turn_start=turn_start, kept_tokens=suffix[cut], total=suffix[0])
