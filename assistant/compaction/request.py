"""The values that cross the seam between a caller and context management (docs/COMPACTION.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from assistant.compaction.recall import RecallBlock
from assistant.conversation import CompactionRecord, Conversation
from assistant.llm.base import CancelToken, EncodedPrompt

__all__ = ["CallRequest", "MessageFit", "PreparedRequest"]


@dataclass(frozen=True, eq=False)
class CallRequest:
    """One question to context management: this conversation, sent with this system prompt
    and these tool schemas (None: no tools)."""

    conv: Conversation
    system_prompt: str
    tools: Sequence[dict[str, Any]] | None = None
    #: Stops a summary written on the way (the job's token).
    cancel: CancelToken | None = None
    #: What a manual compaction should keep most (``/compact FOCUS``).
    focus: str | None = None

    def on(self, conv: Conversation) -> CallRequest:
        """The same request about another conversation (a trial copy, a continuation)."""
        return replace(self, conv=conv)


@dataclass
class PreparedRequest:
    """What to send: the messages exactly as the model will see them."""

    messages: list[dict[str, Any]]
    prompt_tokens: int
    #: The hard limit: the model's window (the whole prompt and reserve fit in it).
    window: int
    pruned_tokens: int = 0
    compaction: CompactionRecord | None = None
    notices: list[str] = field(default_factory=list)
    #: Room the policy leaves for the reply (``window - prompt_tokens``, at most reserve).
    reserve: int = 0
    #: "system", "tools", "summary", "conversation", "tool_outputs" -> tokens (sums to
    #: prompt_tokens).
    segments: dict[str, int] = field(default_factory=dict)
    #: Unanswered outputs cut to fit: message id -> (tokens before, tokens after).
    trimmed: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Excerpts of earlier messages put beside the latest question (:mod:`.recall`).
    recall: RecallBlock | None = None
    #: ``messages`` rendered and tokenized as counted (``prompt_tokens``): given to
    #: ``generate`` so the backend does not tokenize them again.
    prompt: EncodedPrompt | None = None
    #: The target the history is kept within (the size the model was measured to use
    #: well; 0: the window). The latest turn may go beyond it, up to ``window``.
    target: int = 0


@dataclass(frozen=True)
class MessageFit:
    """A new user message's ``tokens`` and the ``room`` the window has for it (less the
    reserve, system prompt, tools and the smallest summary)."""

    tokens: int
    room: int

    @property
    def fits(self) -> bool:
        return self.tokens <= self.room

    def refusal(self) -> str:
        """What the user is told when it does not fit (nothing was sent)."""
        return (
            f"Not sent: your message is {self.tokens:,} tokens and the model's window has "
            f"room for {self.room:,} (after the system prompt, the tools, the room kept for "
            "the reply and a short summary of the chat). Shorten it, split it over several "
            "messages, or put it in a file in the workspace and ask about it (/read PATH)."
        )
