"""What the agent needs from the context controller (so tests can pass a stand-in).

:class:`assistant.compaction.controller.ContextController` satisfies it. ``on_event`` is set
by whoever builds the controller and the agent (``engine.build_engine``) to the agent's
``on_context_event``; the agent never changes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from assistant.compaction.controller import MessageFit, PreparedRequest
from assistant.compaction.events import ContextEvent
from assistant.config import EffectivePolicy
from assistant.conversation import CompactionReason, CompactionRecord, Conversation
from assistant.llm.base import CancelToken

CompactReason = CompactionReason


class ContextManager(Protocol):
    on_event: Callable[[ContextEvent], None] | None

    @property
    def policy(self) -> Callable[[], EffectivePolicy]:
        """The policy in force (the agent sizes tool outputs by its window)."""
        ...

    def message_fit(
        self,
        conv: Conversation,
        text: str,
        *,
        system_prompt: str,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> MessageFit:
        """Whether ``text`` as the next user message fits the window whole."""
        ...

    def prepare(
        self,
        conv: Conversation,
        *,
        system_prompt: str,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
    ) -> PreparedRequest: ...

    def compact(
        self,
        conv: Conversation,
        *,
        system_prompt: str,
        reason: CompactReason,
        focus: str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
    ) -> CompactionRecord | None: ...

    def handle_overflow(
        self,
        conv: Conversation,
        *,
        system_prompt: str,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
    ) -> PreparedRequest:
        """Compact after ContextOverflowError and return the request to retry with.

        Raises an ``LLMError`` (ContextTooLargeError) when that is not possible, and
        ``GenerationCancelled`` when the user stopped the summary."""
        ...
