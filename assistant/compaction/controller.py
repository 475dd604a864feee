"""The single entry point of context management (SKELETON: being completed for issue 3).

``prepare`` runs before every model call: prune, count exactly, compact when
prompt + reserve > window. ``compact`` is the forced path (overflow retry, /compact).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assistant.compaction.events import ContextEvent
from assistant.config import EffectivePolicy
from assistant.conversation import CompactionRecord, Conversation, Message
from assistant.llm.base import CancelToken, LLMBackend


@dataclass
class PreparedRequest:
    """What to send: the messages exactly as the model will see them."""

    messages: list[dict[str, Any]]
    prompt_tokens: int
    window: int
    pruned_tokens: int = 0
    compaction: CompactionRecord | None = None
    notices: list[str] = field(default_factory=list)


class ContextController:
    def __init__(
        self,
        backend: LLMBackend,
        policy: Callable[[], EffectivePolicy],
        *,
        prune_enabled: Callable[[], bool] = lambda: True,
        auto_compact: Callable[[], bool] = lambda: True,
        compact_on_overflow: Callable[[], bool] = lambda: True,
        on_event: Callable[[ContextEvent], None] | None = None,
    ) -> None:
        self.backend = backend
        self.policy = policy
        self.prune_enabled = prune_enabled
        self.auto_compact = auto_compact
        self.compact_on_overflow = compact_on_overflow
        self.on_event = on_event

    def build_messages(self, conv: Conversation, system_prompt: str) -> list[Message]:
        """System prompt + summary (synthetic user message) + kept messages."""
        out = [Message(id="system", role="system", content=system_prompt)]
        rec = conv.last_compaction
        if rec is not None:
            out.append(Message(id="summary", role="user", content=rec.summary))
        out.extend(conv.kept_messages())
        return out

    def prepare(
        self,
        conv: Conversation,
        *,
        system_prompt: str,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
    ) -> PreparedRequest:
        msgs = [m.to_openai() for m in self.build_messages(conv, system_prompt)]
        n = self.backend.count_prompt(msgs, tools)
        return PreparedRequest(messages=msgs, prompt_tokens=n, window=self.policy().window)

    def compact(
        self,
        conv: Conversation,
        *,
        system_prompt: str,
        reason: Literal["threshold", "overflow", "manual"],
        focus: str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
    ) -> CompactionRecord | None:
        return None
