"""What the agent needs from the context controller (so tests can pass a stand-in).

Every entry point takes one :class:`~assistant.compaction.request.CallRequest` (the
conversation, system prompt, tool schemas, cancel token, focus), built once per turn.

:class:`assistant.compaction.controller.ContextController` satisfies it. ``on_event`` is set
by whoever builds the controller and the agent (``engine.build_engine``) to the agent's
``on_context_event``; the agent never changes it.
"""

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
        """Compact after ContextOverflowError and return the request to retry with.

        Raises an ``LLMError`` (ContextTooLargeError) when that is not possible, and
        ``GenerationCancelled`` when the user stopped the summary."""
        ...
