"""Events the context controller reports (for the UI, the CLI and the logs), and the
lines both faces show for them.

Fields added after the first version have defaults, so older constructors keep working.
"""

from __future__ import annotations

from dataclasses import dataclass

from assistant.conversation import CompactionReason, CompactionRecord


@dataclass(frozen=True)
class PruneEvent:
    message_ids: tuple[str, ...]
    tokens_freed: int


@dataclass(frozen=True)
class CompactionStarted:
    reason: CompactionReason
    tokens_before: int
    #: Messages that will be summarized.
    messages: int = 0


@dataclass(frozen=True)
class CompactionFinished:
    record: CompactionRecord


@dataclass(frozen=True)
class CompactionFailed:
    reason: CompactionReason
    error: str
    tokens_before: int = 0


@dataclass(frozen=True)
class CompactionCancelled:
    reason: CompactionReason
    tokens_before: int = 0


@dataclass(frozen=True)
class TrimEvent:
    """Unanswered tool outputs were cut (head and tail kept) because they could not fit
    beside the reply whole. Reported when the set of cut outputs changes."""

    message_ids: tuple[str, ...]
    tokens_before: int
    tokens_after: int


def trim_text(event: TrimEvent) -> str:
    """One line for the window and the terminal."""
    n = len(event.message_ids)
    return (
        f"Cut {n} tool output{'s' if n != 1 else ''} or message{'s' if n != 1 else ''} the "
        f"model has not answered yet to fit the window: {event.tokens_before:,} -> "
        f"{event.tokens_after:,} tokens (the head and tail are kept; the marker names the "
        "lines left out; the chat keeps them whole)"
    )


ContextEvent = (
    PruneEvent
    | TrimEvent
    | CompactionStarted
    | CompactionFinished
    | CompactionFailed
    | CompactionCancelled
)


def prune_note(count: int, tokens: int) -> str:
    noun = "tool output" if count == 1 else "tool outputs"
    return f"Cleared {count:,} old {noun}, {tokens:,} tokens"


def compaction_note(record: CompactionRecord) -> str:
    return f"Compacted from {record.tokens_before:,} to {record.tokens_after:,} tokens"


def context_line(event: ContextEvent) -> str:
    """What the window's notice and the terminal's ``[context]`` line say of ``event``."""
    if isinstance(event, PruneEvent):
        return prune_note(len(event.message_ids), event.tokens_freed)
    if isinstance(event, TrimEvent):
        return trim_text(event)
    if isinstance(event, CompactionStarted):
        return f"Compacting ({event.reason})..."
    if isinstance(event, CompactionFinished):
        return compaction_note(event.record)
    if isinstance(event, CompactionFailed):
        return f"Compaction failed: {event.error}"
    return "Compaction cancelled."
