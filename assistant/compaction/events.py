"""Events the context controller reports (for the UI, the CLI and the logs)."""

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


@dataclass(frozen=True)
class CompactionFinished:
    record: CompactionRecord


@dataclass(frozen=True)
class CompactionFailed:
    reason: Literal["threshold", "overflow", "manual"]
    error: str


@dataclass(frozen=True)
class CompactionCancelled:
    reason: Literal["threshold", "overflow", "manual"]


ContextEvent = PruneEvent | CompactionStarted | CompactionFinished | CompactionFailed | CompactionCancelled
