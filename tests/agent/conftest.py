"""Fixtures for agent tests: settings with a temporary workspace, an event recorder, and
an agent wired to the scripted backend and the real context controller."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from assistant.agent.commands import AppCommand, ChatInput, ToolCommand, parse_input
from assistant.agent.events import AgentEvent
from assistant.agent.loop import Agent
from assistant.compaction.controller import ContextController
from assistant.config import Settings
from assistant.conversation import Conversation
from assistant.llm.base import CancelToken
from assistant.tools.approval import ApprovalDecision, ApprovalRequest, Approver
from assistant.tools.registry import ToolRegistry
from tests.fakes.scripted import ScriptedBackend

E = TypeVar("E")


class Recorder:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self.hooks: list[Callable[[AgentEvent], None]] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)
        for hook in self.hooks:
            hook(event)

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    def kinds(self) -> list[str]:
        return [type(e).__name__ for e in self.events]


class ScriptedApprover:
    def __init__(self, *answers: ApprovalDecision) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return self.answers.pop(0) if self.answers else ApprovalDecision.DENY


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


@pytest.fixture
def settings(workspace: Path) -> Settings:
    return Settings(workspace=str(workspace))


class Harness:
    def __init__(
        self,
        settings: Settings,
        replies: Sequence[Any] = (),
        approver: Approver | None = None,
        backend: ScriptedBackend | None = None,
        controller: Any = None,
        wire_events: bool = True,
    ) -> None:
        self.settings = settings
        self.backend = backend or ScriptedBackend(list(replies))
        self.events = Recorder()
        self.controller = controller or ContextController(
            self.backend,
            lambda: settings.effective_policy(self.backend.info.trained_context),
            switches=settings.switches,
        )
        self.agent = Agent(
            self.backend,
            self.controller,
            ToolRegistry.default(),
            lambda: self.settings,
            approver,
            self.events,
        )
        if wire_events:  # as engine.build_engine does
            self.controller.on_event = self.agent.on_context_event
        self.conv = Conversation()

    def say(self, text: str, cancel: CancelToken | None = None) -> Any:
        """Typed input as the session service runs it: parsed once, then the agent's
        entry point for it. Other app commands and errors are returned."""
        parsed = parse_input(text)
        if isinstance(parsed, ChatInput):
            self.agent.chat(self.conv, parsed.text, cancel)
        elif isinstance(parsed, ToolCommand):
            self.agent.run_tool_command(self.conv, parsed.tool, parsed.arguments, cancel)
        elif isinstance(parsed, AppCommand) and parsed.name == "compact":
            self.agent.compact(self.conv, parsed.argument or None, cancel)
        else:
            return parsed
        return None

    def roles(self) -> list[str]:
        return [m.role for m in self.conv.messages]


@pytest.fixture
def harness(settings: Settings) -> Callable[..., Harness]:
    def make(*replies: Any, **kw: Any) -> Harness:
        return Harness(settings, replies, **kw)

    return make


def call_block(name: str, **arguments: Any) -> str:
    import json

    return "```tool_call\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```"
