"""The rolling window: what desktop chat apps do when the window fills.

LM Studio's "rolling window" and Jan's context shift keep the system prompt and the newest
messages that fit, and drop the rest: no summary, no recall. The answer benchmark
(:mod:`bench.answers`) runs it as the answer variant :data:`ROLLING_WINDOW` beside the app's
variants, with the prompt size the app's policy gives (the same window and the same reply
reserve): for each question, the system prompt, then the newest messages such that
``prompt + reserve <= window``. A tool result is never sent without its call (the oldest
kept message is never a tool result). It keeps no state: each prompt is cut afresh from the
whole conversation, so a copy of the chat at any point gives the same prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from assistant.agent.controller_api import CompactReason
from assistant.compaction import context
from assistant.compaction.controller import ContextTooLargeError, MessageFit, PreparedRequest
from assistant.compaction.events import ContextEvent
from assistant.compaction.request import CallRequest
from assistant.compaction.tokens import TokenCounter
from assistant.config import EffectivePolicy
from assistant.conversation import CompactionRecord, Message
from assistant.llm.base import PromptCounter

#: The answer variant's name.
ROLLING_WINDOW: Final = "rolling-window"


class RollingWindow:
    """A :class:`~assistant.agent.controller_api.ContextManager` that sends the newest
    messages that fit ``policy()``'s window less its reply reserve (see the module)."""

    def __init__(
        self, backend: PromptCounter, policy: Callable[[], EffectivePolicy],
        counter: TokenCounter | None = None,
    ) -> None:
        self.backend = backend
        self.policy = policy
        self.counter = counter or TokenCounter(backend)
        self.on_event: Callable[[ContextEvent], None] | None = None

    def message_fit(self, call: CallRequest, text: str) -> MessageFit:
        size = self.counter.message(Message(role="user", content=text))
        return MessageFit(size, self.policy().window)

    def _request(
        self, system_prompt: str, messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
    ) -> PreparedRequest:
        pol = self.policy()
        msgs = context.to_openai([context.system_message(system_prompt), *messages])
        n = self.counter.exact(msgs, tools)
        return PreparedRequest(messages=msgs, prompt_tokens=n, window=pol.window,
                               reserve=min(pol.reserve, max(pol.window - n, 0)))

    def first_kept(self, call: CallRequest) -> int:
        """Index of the oldest message sent: the newest ones whose summed sizes fit beside
        the system prompt and the reserve (the newest message is always kept)."""
        pol = self.policy()
        msgs = call.conv.messages
        if not msgs:
            return 0
        budget = pol.window - pol.reserve - self._request(call.system_prompt, [],
                                                          call.tools).prompt_tokens
        start = len(msgs) - 1
        used = self.counter.message(msgs[start])
        while start > 0:
            size = self.counter.message(msgs[start - 1])
            if used + size > budget:
                break
            used += size
            start -= 1
        return _skip_results(msgs, start)

    def prepare(self, call: CallRequest) -> PreparedRequest:
        pol = self.policy()
        msgs = call.conv.messages
        start = self.first_kept(call)
        req = self._request(call.system_prompt, msgs[start:], call.tools)
        # The summed sizes are an estimate of the template's count: cut on until it fits.
        while req.prompt_tokens + pol.reserve > pol.window and start < len(msgs) - 1:
            start = _skip_results(msgs, start + 1)
            req = self._request(call.system_prompt, msgs[start:], call.tools)
        return req

    def handle_overflow(self, call: CallRequest) -> PreparedRequest:
        """The prompt always fits unless the newest message alone does not: then nothing
        can be dropped."""
        req = self.prepare(call)
        if req.prompt_tokens >= req.window:
            raise ContextTooLargeError("the newest message alone does not fit the window")
        return req

    def compact(self, call: CallRequest, reason: CompactReason) -> CompactionRecord | None:
        """A rolling window writes no summary."""
        return None


def _skip_results(msgs: Sequence[Message], start: int) -> int:
    """``start`` moved past tool results (whose call would be cut), keeping the newest."""
    while start < len(msgs) - 1 and msgs[start].role == "tool":
        start += 1
    return start
