"""What the agent needs from the context controller (so tests can pass a stand-in); the
builder sets ``on_event`` to the agent's ``on_context_event``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from assistant.compaction.events import ContextEvent
from assistant.compaction.request import CallRequest, MessageFit, PreparedRequest
from assistant.config import EffectivePolicy
from assistant.conversation import CompactionReason, CompactionRecord, Conversation

CompactReason = CompactionReason


class ContextManager(Protocol):
    on_event: Callable[[ContextEvent], None] | None

    @property
    def policy(self) -> Callable[[], EffectivePolicy]:
        """The policy in force (the agent sizes tool outputs by its window)."""
        ...

    def message_fit(self, call: CallRequest, text: str) -> MessageFit:
        """Whether ``text`` as the next user message fits the window whole."""
        ...

    def prepare(self, call: CallRequest) -> PreparedRequest: ...

    def compact(self, call: CallRequest, reason: CompactReason) -> CompactionRecord | None:
        """Summarize older turns now (``call.focus``: what to keep most)."""
        ...

    def handle_overflow(self, call: CallRequest) -> PreparedRequest:
        """Compact after ContextOverflowError and return the request to retry with (raises
        ContextTooLargeError, or ``GenerationCancelled`` when stopped)."""
        ...


@runtime_checkable
class DraftPreview(Protocol):
    """Optional: the request a draft would make, changing nothing (the read-ahead)."""

    def preview(self, call: CallRequest, chat: Conversation) -> PreparedRequest | None:
        """``prepare`` of ``call.conv`` (``chat`` with the draft appended, its messages
        copies) without events, memos or compaction (None where one is needed)."""
        ...
