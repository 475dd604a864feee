"""Whether the user message an edit or a regeneration would answer fits the window whole,
checked on the worker before the branch is written (the latest message is never cut)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from assistant.agent.controller_api import ContextManager
from assistant.agent.events import MessageRefused
from assistant.compaction.request import CallRequest
from assistant.conversation import Conversation
from assistant.llm.base import LLMError
from assistant.sessions.handle import ChatHandle


@dataclass(frozen=True)
class FitCheck:
    """What the room depends on besides the chat (taken on the owner thread)."""

    controller: ContextManager
    system_prompt: str
    tools: Sequence[dict[str, Any]]

    def refusal(self, before: Conversation, text: str, replaces: str) -> MessageRefused | None:
        """``MessageRefused`` when ``text`` after ``before`` does not fit whole; else None."""
        try:
            call = CallRequest(before, self.system_prompt, self.tools)
            fit = self.controller.message_fit(call, text)
        except LLMError:  # an engine that cannot count now: the model call says what is wrong
            return None
        # No room at all: the system prompt or the tools are what does not fit; the model
        # call says so (as for a new message).
        if fit.fits or fit.room <= 0:
            return None
        return MessageRefused(text, fit.tokens, fit.room, replaces=replaces)


def edit_refusal(
    handle: ChatHandle, message_id: str, text: str, fit: FitCheck
) -> MessageRefused | None:
    """``MessageRefused`` when ``text`` replacing ``message_id`` does not fit whole; else None."""
    upto = handle.conversation_at(message_id)
    before = Conversation(messages=upto.messages[:-1], compactions=upto.compactions)
    return fit.refusal(before, text, message_id)


def regenerate_refusal(handle: ChatHandle, reply_id: str, fit: FitCheck) -> MessageRefused | None:
    """``MessageRefused`` when the question ``reply_id`` answers does not fit whole; else None."""
    upto = handle.conversation_at(reply_id)
    for index in range(len(upto.messages) - 2, -1, -1):
        message = upto.messages[index]
        if message.role == "user" and not handle.is_branch_summary(message.id):
            before = Conversation(messages=upto.messages[:index], compactions=upto.compactions)
            return fit.refusal(before, message.content, message.id)
    return None


def refusal_text(refused: MessageRefused, *, regenerate: bool) -> str:
    """What the user is told (nothing was written)."""
    head = "Not regenerated: the message it answers" if regenerate else "Not sent: your message"
    return (
        f"{head} is {refused.tokens:,} tokens and the model's window has room for "
        f"{refused.room:,} (after the system prompt, the tools, the room kept for the reply "
        "and a short summary of the chat). It is back in the input box to edit: shorten it, "
        "split it over several messages, or put it in a file in the workspace and ask about "
        "it (/read PATH)."
    )
