"""Continue generation with the real embedded model (issue 26): a reply cut by the length
limit is written further, and the longer reply starts with the old one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assistant.agent.events import AgentEvent, TurnFinished
from assistant.agent.loop import Agent
from assistant.compaction.controller import ContextController
from assistant.config import Settings
from assistant.conversation import Conversation, Message
from assistant.tools.registry import ToolRegistry

pytestmark = [pytest.mark.integration]


def test_continue_writes_more_of_a_reply_cut_short(real_backend: Any, tmp_path: Path) -> None:
    real_backend.reset_kv_cache()
    settings = Settings(workspace=str(tmp_path))
    settings.sampling.max_reply_tokens = 16  # bounded work: two short model calls
    settings.sampling.temperature = 0.0
    policy = settings.effective_policy(real_backend.info.trained_context)
    controller = ContextController(real_backend, lambda: policy)
    events: list[AgentEvent] = []
    agent = Agent(real_backend, controller, ToolRegistry.default(), lambda: settings, None,
                  events.append)
    controller.on_event = agent.on_context_event
    conv = Conversation()
    agent.chat(conv, "List the days of the week, one per line, with a short note on each.")
    first = conv.messages[-1]
    assert first.role == "assistant" and first.content
    branched: list[Message] = []

    def branch(reply: Message) -> None:
        branched.append(reply)
        conv.messages.remove(reply)  # what moving to just before the reply does

    agent.continue_reply(conv, branch)
    assert isinstance(events[-1], TurnFinished) and events[-1].error is None
    assert branched == [first]
    longer = conv.messages[-1]
    assert longer.role == "assistant" and longer.id != first.id
    assert longer.content.startswith(first.content)
    added = longer.content[len(first.content):]
    assert len(added.strip()) > 3
    assert first.content.strip() not in added  # went on, did not start over
    assert longer.figures is not None and longer.figures.completion_tokens > 0
    print(f"\n--- first: {first.content!r}\n--- added: {added!r}")
