"""The agent with the real embedded model: a large user /read is pruned in later prompts.

Flow: the user /reads a large file (a user-initiated tool call, no model reply), then chats
for several turns. Before every model call the controller prunes; once the chat has enough
user turns the old read result is replaced by the placeholder in what the model sees, while
the message itself keeps its content. No prompt may exceed the window.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.agent.events import AgentEvent, ContextUsage, TurnFinished
from assistant.agent.loop import Agent
from assistant.compaction.controller import ContextController
from assistant.config import Settings
from assistant.conversation import PRUNED_PLACEHOLDER, Conversation
from assistant.llm.base import StreamEvent
from assistant.tools.registry import ToolRegistry

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class RecordingBackend:
    """Delegates to the real backend and keeps each prompt the model was given."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.prompts: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def generate(self, messages: Any, options: Any, **kw: Any) -> Iterator[StreamEvent]:
        text = self._inner.render_prompt(messages, kw.get("tools"))
        self.prompts.append((text, len(self._inner.tokenize(text))))
        return self._inner.generate(messages, options, **kw)  # type: ignore[no-any-return]


def test_old_read_output_is_pruned_and_prompts_fit(real_backend: Any, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lines = [f"Inventory line {i:04d}: widget-{i:04d} costs {i % 97} euros" for i in range(1, 801)]
    (workspace / "inventory.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = Settings(workspace=str(workspace), step_limit=2)
    settings.sampling.max_reply_tokens = 48
    settings.sampling.temperature = 0.0
    backend = RecordingBackend(real_backend)
    policy = settings.effective_policy(real_backend.info.trained_context)
    controller = ContextController(
        backend,
        lambda: policy,
    )
    events: list[AgentEvent] = []
    agent = Agent(
        backend,
        controller,
        ToolRegistry.default(),
        lambda: settings,
        None,
        events.append,
    )
    controller.on_event = agent.on_context_event
    conv = Conversation()

    agent.run_tool_command(conv, "read_file", {"path": "inventory.txt"})
    read_result = conv.messages[1]
    assert read_result.role == "tool" and "widget-0001" in read_result.content
    assert "Truncated" in read_result.content  # capped, with the marker
    assert not backend.prompts  # the /read itself made no model call

    for question in (
        "What does line 1 of the inventory say?",
        "Thanks. Name one widget.",
        "And what is the cheapest item?",
    ):
        agent.chat(conv, question)

    assert len(backend.prompts) >= 3
    # Three consecutive lines of the file: present verbatim only while the tool output is
    # in the prompt (a model reply may quote a single widget, never this exact block).
    chunk = "\n".join(lines[49:52])
    first_text, _ = backend.prompts[0]
    assert chunk in first_text
    last_text, _ = backend.prompts[-1]
    assert chunk not in last_text
    # The cleared output says what it was and how to get it back.
    assert f"{PRUNED_PLACEHOLDER[:-1]}: read_file inventory.txt lines 1-" in last_text
    assert "read it again if you need it]" in last_text
    assert read_result.pruned and "widget-0001" in read_result.content  # lossless
    window = policy.window
    for _, tokens in backend.prompts:
        assert tokens < window
    for usage in (e for e in events if isinstance(e, ContextUsage)):
        assert (
            usage.prompt_tokens + min(settings.sampling.max_reply_tokens, usage.reserve) <= window
        )
    assert all(e.error is None for e in events if isinstance(e, TurnFinished))


def test_a_file_read_then_asked_about_is_in_the_prompt_of_that_call(
    real_backend: Any, tmp_path: Path
) -> None:
    """Issue 12's case: after an earlier turn, /read a file larger than ``protect``, then
    ask about it: the call that answers the question holds the whole file."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lines = [f"Note {i}: the shipment code for crate {i} is QX-{i * 37 % 1000:03d}."
             for i in range(1, 106)]
    (workspace / "notes.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = Settings(workspace=str(workspace))
    settings.sampling.max_reply_tokens = 24
    settings.sampling.temperature = 0.0
    backend = RecordingBackend(real_backend)
    policy = settings.effective_policy(real_backend.info.trained_context)
    controller = ContextController(backend, lambda: policy)
    events: list[AgentEvent] = []
    agent = Agent(backend, controller, ToolRegistry.default(), lambda: settings, None,
                  events.append)
    controller.on_event = agent.on_context_event
    conv = Conversation()

    agent.chat(conv, "Hello! I will show you my shipping notes.")
    agent.run_tool_command(conv, "read_file", {"path": "notes.txt"})
    read_result = conv.messages[-1]
    size = controller.counter.message(read_result)
    assert size > policy.protect  # the case that used to be cleared before the question
    assert "Truncated" not in read_result.content  # the whole file fits one read
    agent.chat(conv, "What is the shipment code for crate 7 in notes.txt?")

    assert len(backend.prompts) == 2
    question_prompt, tokens = backend.prompts[-1]
    assert read_result.content in question_prompt  # the whole file, as read
    assert "What is the shipment code for crate 7" in question_prompt
    assert not read_result.pruned
    assert tokens < policy.window
    assert all(e.error is None for e in events if isinstance(e, TurnFinished))
