"""Where to cut: which tail of the chat stays verbatim, which head is summarized.
More in docs/COMPACTION.md."""

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


def valid_cuts(messages: Sequence[Message]) -> list[bool]:
    """``valid[i]`` for ``i`` in ``0..len``: not between a call and its result, not before a
    stopped reply or a result (docs/COMPACTION.md)."""
    n = len(messages)
    valid = [i in (0, n) or (messages[i].role in ("user", "system", "assistant")
                             and not messages[i].stopped) for i in range(n + 1)]
    call_at: dict[str, int] = {}
    for i, msg in enumerate(messages):
        for call in msg.tool_calls:
            call_at[call.id] = i
        if msg.role == "tool" and msg.tool_call_id in call_at:
            for j in range(call_at[msg.tool_call_id] + 1, i + 1):
                valid[j] = False
    return valid


def is_turn_start(msg: Message) -> bool:
    """A user message, or a tool call the user started (``/read``, a dropped file)."""
    return msg.role in ("user", "system") or (
        msg.role == "assistant" and msg.initiated_by == "user" and bool(msg.tool_calls)
    )


def find_cut(
    messages: Sequence[Message], counts: Sequence[int], *, keep: int, limit: int | None = None,
    floor: int = 0, allowed: Sequence[bool] | None = None, prefer: int | None = None,
    prefer_limit: int | None = None,
) -> CutPlan:
    """Plan a cut of ``messages`` with their segment ``counts`` (docs/COMPACTION.md)."""
    n = len(messages)
    if len(counts) != n:
        raise ValueError("one count per message is needed")
    if allowed is not None and len(allowed) != n + 1:
        raise ValueError("allowed needs one flag per cut position (len + 1)")
    hard = keep if limit is None else max(limit, keep)
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + counts[i]
    if suffix[0] <= keep:  # everything fits: nothing has to be summarized
        return CutPlan(cut=0, turn_start=None, kept_tokens=suffix[0], total=suffix[0])
    valid = valid_cuts(messages)
    ok = [valid[i] and (allowed is None or allowed[i]) for i in range(n + 1)]
    inner = [i for i in range(1, n) if ok[i]]
    cut: int | None
    prefer_hard = hard if prefer_limit is None else max(hard, prefer_limit)
    if prefer is not None and prefer in inner and floor <= suffix[prefer] <= prefer_hard:
        cut = prefer
    else:
        cut = _choose(inner, messages, suffix, keep=keep, floor=floor, hard=hard)
    if cut is None:
        if ok[n]:
            cut = n
        elif inner:
            cut = inner[-1]
        else:
            return CutPlan(cut=0, turn_start=None, kept_tokens=suffix[0], total=suffix[0])
    turn_start: int | None = None
    if 0 < cut < n and not is_turn_start(messages[cut]):
        turn_start = next((j for j in range(cut - 1, -1, -1) if messages[j].role == "user"), None)
    return CutPlan(cut=cut, turn_start=turn_start, kept_tokens=suffix[cut], total=suffix[0])


def _choose(
    cuts: Sequence[int], messages: Sequence[Message], suffix: Sequence[int], *, keep: int,
    floor: int, hard: int,
) -> int | None:
    def best(cands: Sequence[int]) -> int | None:
        under = [i for i in cands if suffix[i] <= keep]
        if under:
            return min(under)  # the largest tail not over keep
        return max(cands) if cands else None  # the smallest tail over keep

    in_range = [i for i in cuts if floor <= suffix[i] <= hard]
    boundaries = [i for i in in_range if is_turn_start(messages[i])]
    choice = best(boundaries) if boundaries else best(in_range)
    if choice is not None:
        return choice
    fits = [i for i in cuts if suffix[i] <= hard]
    return min(fits) if fits else None
