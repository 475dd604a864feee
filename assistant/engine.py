"""Builds the non-Qt core for one loaded model: context controller + tools + agent.

Used by the session service (:mod:`assistant.service`, behind the window and the terminal
chat) and the smoke test, so all of them run exactly the same pipeline. It is also where
the controller's events are connected to the agent (``controller.on_event``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from assistant.agent.events import AgentEvent
from assistant.agent.loop import Agent
from assistant.compaction.controller import ContextController
from assistant.config import EffectivePolicy, Settings
from assistant.llm.base import LLMBackend
from assistant.tools.approval import Approver
from assistant.tools.registry import ToolRegistry


@dataclass
class Engine:
    backend: LLMBackend
    controller: ContextController
    agent: Agent


def build_engine(
    backend: LLMBackend,
    settings: Callable[[], Settings],
    approver: Approver | None,
    on_event: Callable[[AgentEvent], None],
) -> Engine:
    def policy() -> EffectivePolicy:
        return settings().effective_policy(backend.info.trained_context)

    controller = ContextController(
        backend,
        policy,
        prune_enabled=lambda: settings().switches().prune,
        auto_compact=lambda: settings().switches().auto_compact,
        compact_on_overflow=lambda: settings().switches().compact_on_overflow,
    )
    agent = Agent(backend, controller, ToolRegistry.default(), settings, approver, on_event)
    controller.on_event = agent.on_context_event
    return Engine(backend, controller, agent)
