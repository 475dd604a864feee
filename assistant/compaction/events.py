"""Events the context controller reports (for the UI, the CLI and the logs).

Fields added after the first version have defaults, so older constructors keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assistant.conversation import CompactionRecord


@dataclass(frozen=True)
class PruneEvent:
    message_ids: tuple[str, ...]
    tokens_freed: int


@dataclass(frozen=True)
class CompactionStarted:
    reason: Literal["threshold", "overflow", "manual"]
    tokens_before: int
    #: Messages that will be summarized.
    messages: int = 0


@dataclass(frozen=True)
class CompactionFinished:
    record: CompactionRecord

    @property
    def tokens_reclaimed(self) -> int:
        return self.record.tokens_before - self.record.tokens_after


@dataclass(frozen=True)
class CompactionFailed:
    reason: Literal["threshold", "overflow", "manual"]
    error: str
    tokens_before: int = 0


@dataclass(frozen=True)
class CompactionCancelled:
    reason: Literal["threshold", "overflow", "manual"]
    tokens_before: int = 0


ContextEvent = (
    PruneEvent | CompactionStarted | CompactionFinished | CompactionFailed | CompactionCancelled
)
