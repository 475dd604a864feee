"""How much room a compaction gives the summary and the kept tail (docs/COMPACTION.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from assistant.compaction.summary import (
    MECHANICAL_MARKER,
    SUMMARY_HEADER,
    SUMMARY_HEADER_SHORT,
    min_budget,
)
from assistant.config import EffectivePolicy

#: Share of the policy's summary budget for the model-written part of the summary.
MODEL_SHARE = 0.5
MIN_MODEL_BUDGET = 32
#: Share of the room (window - reserve - fixed overhead) the verbatim record may grow to.
#: 0.3 lost two of the real session's 16 must-facts at SmolLM2's shipped 2,048 tokens (the
#: first message's "code sharing between the different run modes", "ok, create a branch
#: refactor"); 0.4 keeps all 16 at 2,048, 4,096, 8,192 and in standard mode.
RECORD_ROOM_SHARE = 0.4
#: Prompt size aimed at after a compaction, and the least it may be while older history was
#: there to keep (shares of the window).
FILL_TARGET = 0.58
MIN_FILL = 0.5
#: Room left free after a compaction for the chat to grow (share of the window).
GROWTH_SHARE = 0.12
#: Tokens kept free beside the summary for its message template.
SUMMARY_SLACK = 16
#: At summary budgets up to this many tokens the summary uses the short header.
SMALL_SUMMARY_BUDGET = 256
#: The least verbatim record a summary keeps beside a latest message that fills the window.
MIN_RECORD = 48


@dataclass(frozen=True)
class Budget:
    room: int
    model: int
    record: int
    header: int
    short: bool


def compaction_budget(
    policy: EffectivePolicy, overhead: int, count: Callable[[str], int], *,
    grammar_floor: bool = True,
) -> Budget:
    """The sizes of one compaction; ``grammar_floor``: the model part gets what the summary
    grammar needs when the window has room."""
    short = policy.summary_budget <= SMALL_SUMMARY_BUDGET
    header = count((SUMMARY_HEADER_SHORT if short else SUMMARY_HEADER) + MECHANICAL_MARKER) + 4
    room = max(policy.window - policy.reserve - overhead - SUMMARY_SLACK, 0)
    model = max(MIN_MODEL_BUDGET, int(policy.summary_budget * MODEL_SHARE))
    model = min(model, max(room // 4, MIN_MODEL_BUDGET))
    if grammar_floor and model < min_budget() <= room // 4:
        # A small window's 128-token summary budget would cut off every model summary
        # under the grammar: the model part gets the grammar's minimum.
        model = min_budget()
    record = max(policy.summary_budget - model - header, int(room * RECORD_ROOM_SHARE))
    return Budget(room=room, model=model, record=record, header=header, short=short)


def minimal_summary(policy: EffectivePolicy, count: Callable[[str], int]) -> int:
    """Tokens the smallest summary takes in the prompt (header, short record, slack): the
    latest message may use what the window leaves beside it."""
    short = policy.summary_budget <= SMALL_SUMMARY_BUDGET
    header = count((SUMMARY_HEADER_SHORT if short else SUMMARY_HEADER) + MECHANICAL_MARKER) + 4
    return header + MIN_RECORD + SUMMARY_SLACK


def beside_latest(budget: Budget, left: int) -> Budget:
    """``budget`` shrunk to ``left`` tokens beside the latest message: the model part gives
    way first, the record keeps at least :data:`MIN_RECORD`."""
    if budget.header + budget.model + budget.record <= left:
        return budget
    model = min(budget.model, max(left - budget.header - MIN_RECORD, 0))
    if model < MIN_MODEL_BUDGET:
        model = 0
    record = max(min(budget.record, left - budget.header - model), 0)
    return replace(budget, model=model, record=record)


def tail_bounds(
    policy: EffectivePolicy, budget: Budget, overhead: int, summary: int, *, manual: bool
) -> tuple[int, int, int]:
    """(keep, floor, limit) for the kept tail, given a summary of ``summary`` tokens."""
    fits = max(budget.room - summary, 0)
    limit = max(fits - int(policy.window * GROWTH_SHARE), min(policy.keep_recent, fits))
    if manual:
        return min(policy.keep_recent, limit), 0, limit
    target = int(policy.window * FILL_TARGET) - overhead - summary
    keep = min(max(target, policy.keep_recent), limit)
    floor = min(keep, max(int(policy.window * MIN_FILL) - overhead - summary, 0))
    return keep, floor, limit
