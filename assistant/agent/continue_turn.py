"""Continue generation as a turn: the last reply written further, in place from its last
token where the backend takes prompt tokens, else by asking (:mod:`.continuation`); the
longer reply becomes the reply's next version. :meth:`Agent.continue_reply` runs it."""

from __future__ import annotations

import time
from collections.abc import Callable

from assistant.agent.continuation import (
    can_continue_in_place,
    continue_request,
    joined,
    only_new,
    open_turn,
)
from assistant.agent.events import Notice, TurnFinished
from assistant.agent.loop import Agent, StreamFailed
from assistant.agent.usage import reply_figures
from assistant.compaction.request import CallRequest
from assistant.conversation import Conversation, Message
from assistant.llm.base import CancelToken, GenerationCancelled, LLMError


def continue_reply(
    agent: Agent,
    conv: Conversation,
    branch: Callable[[Message], object],
    cancel: CancelToken | None = None,
) -> None:
    """``branch(reply)`` moves the chat to just before the reply, then the joined reply is
    appended as its next version."""
    cancel = cancel or CancelToken()
    agent._bind(conv)
    reply = conv.messages[-1] if conv.messages else None
    if reply is None or reply.role != "assistant" or reply.tool_calls:
        agent.on_event(Notice("info", "There is no reply to continue: the chat's last "
                                  "message is not a reply of the assistant."))
        agent.on_event(TurnFinished())
        return
    settings = agent.settings()
    tools = agent.offered_tools()
    call_start = time.perf_counter()
    asked = Conversation(  # the chat and the request, for a model asked to go on
        messages=[*conv.messages, Message(role="user", content=continue_request(reply))],
        compactions=list(conv.compactions),
    )
    prefix = can_continue_in_place(agent.backend)
    call = CallRequest(conv, settings.system_prompt, tools, cancel)
    try:
        prepared = agent.controller.prepare(call if prefix else call.on(asked))
        tokens = open_turn(agent.backend, prepared.messages, tools, reply) if prefix else None
        if prefix and tokens is None:  # the template rewrites the reply: ask instead
            prefix = False
            prepared = agent.controller.prepare(call.on(asked))
        text, result, ttft = agent._generate(prepared, tools, settings, cancel, call_start,
                                            tokens)
    except GenerationCancelled:
        agent.on_event(TurnFinished(stopped=True))
        return
    except (LLMError, StreamFailed) as exc:
        agent.on_event(Notice("error", f"The model could not continue: {exc}"))
        agent.on_event(TurnFinished(error=str(exc)))
        return
    stopped = cancel.cancelled or (result is not None and result.stopped)
    if not prefix:
        text = only_new(reply.content, text)
    if not text.strip():
        if not stopped:
            agent.on_event(Notice("info", "The model had nothing to add to its reply."))
        agent.on_event(TurnFinished(stopped=stopped))
        return
    try:
        branch(reply)
        agent._append(conv, Message(
            role="assistant", content=joined(reply.content, text, in_place=prefix),
            stopped=stopped, figures=reply_figures(result, ttft),
        ))
    except OSError as exc:
        agent._finish_failed(f"Could not save the chat: {exc}")
        return
    agent.on_event(TurnFinished(stopped=stopped))

