"""What the agent needs from the context controller (so tests can pass a stand-in); the
builder sets ``on_event`` to the agent's ``on_context_event``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from assistant.compaction.events import ContextEvent
from assistant.compaction.request import CallRequest, MessageFit, PreparedRequest
from assistant.config import EffectivePolicy
from assistant.conversation import CompactionReason, CompactionRecord

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
