"""Layer 1: clear old tool outputs before every model call (lossless; docs/COMPACTION.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assistant.compaction.tokens import TokenCounter
from assistant.compaction.visibility import unanswered_ids
from assistant.conversation import Message

MIN_USER_TURNS = 2


@dataclass(frozen=True)
class PrunePlan:
    """Which tool results to clear and how many prompt tokens that frees."""

    message_ids: tuple[str, ...] = ()
    tokens_freed: int = 0

    @property
    def applies(self) -> bool:
        return bool(self.message_ids)


def count_user_turns(messages: Sequence[Message]) -> int:
    return sum(1 for m in messages if m.role == "user")


def plan_prune(
    visible: Sequence[Message], counter: TokenCounter, *, protect: int, minimum: int,
    user_turns: int | None = None, cleared_size: Callable[[Message], int] | None = None,
    waiting: frozenset[str] | None = None,
) -> PrunePlan:
    """Decide what to prune among ``visible``; ``user_turns`` counts the whole chat's user
    messages (summarized ones too), ``cleared_size`` a message's size once cleared."""
    turns = count_user_turns(visible) if user_turns is None else user_turns
    if turns < MIN_USER_TURNS:
        return PrunePlan()
    cleared = cleared_size or counter.as_pruned
    if waiting is None:
        waiting = unanswered_ids(visible)
    total = 0
    candidates: list[str] = []
    freed = 0
    for msg in reversed(visible):
        if msg.role != "tool":
            continue
        size = counter.message(msg)
        total += size
        if msg.pruned or total <= protect or msg.id in waiting:
            continue
        gain = size - cleared(msg)
        if gain > 0:
            candidates.append(msg.id)
            freed += gain
    if not candidates or freed < minimum:
        return PrunePlan()
    return PrunePlan(tuple(reversed(candidates)), freed)  # oldest first, as in the chat
