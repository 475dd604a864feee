"""A long latest message with the real embedded model, in the window as shipped (issue 26
item 2 with issue 25's measured target).

SmolLM2's prompts are kept within its measured effective context (2,048 tokens,
models/registry.json); its window (8,192) is the hard limit, which the latest message may
use whole. A report of about 3,000 tokens holding a fact in its first line is sent after a
short turn: it is not refused, goes to the model beyond the target, and the model answers
from it. (Measured first: the model answers "The staging server port is 12345." from this
passage alone, at temperature 0.) Bounded: one 32-token greeting reply, one ~3,300-token
prompt, a 32-token answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assistant.agent.events import AgentEvent, ContextUsage, MessageRefused
from assistant.config import Settings
from assistant.conversation import Conversation
from assistant.engine import build_engine
from assistant.llm.registry import load_registry

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FILLER = (
    "The committee reviewed the quarterly figures for the northern depots and found them "
    "steady.",
    "Several drivers asked for longer breaks during the winter routes, which was noted.",
    "A new forklift arrived at the eastern warehouse and passed its safety inspection.",
    "The canteen menu will change next month to include more soups and fresh bread.",
    "Inventory counts for the spare parts shelf matched the records within two items.",
)


def _report() -> str:
    lines = ["Our staging server port is 12345."]
    lines += [f"{FILLER[i % len(FILLER)]} (note {i})" for i in range(140)]
    lines.append("Question: what is our staging server port? Answer with the number.")
    return "\n".join(lines)


def test_a_message_beyond_the_measured_target_is_sent_and_answered(
    real_backend: Any, tmp_path: Path
) -> None:
    entry = load_registry().by_file(Path(real_backend.info.path).name)
    assert entry is not None and entry.effective_context is not None
    settings = Settings(workspace=str(tmp_path))
    settings.sampling.temperature = 0.0
    settings.sampling.max_reply_tokens = 32
    events: list[AgentEvent] = []
    engine = build_engine(real_backend, lambda: settings, None, events.append)
    policy = engine.controller.policy()
    assert policy.window <= entry.effective_context < policy.limit == 8_192

    conv = Conversation()
    engine.agent.chat(conv, "Hello, I will paste a long report next.")
    text = _report()
    tokens = real_backend.count(text)
    assert policy.window < tokens < 4_000  # beyond the target, well within the window
    engine.agent.chat(conv, text)

    assert not [e for e in events if isinstance(e, MessageRefused)]
    usage = [e for e in events if isinstance(e, ContextUsage)][-1]
    assert usage.prompt_tokens > tokens and usage.prompt_tokens + usage.reserve <= 8_192
    assert usage.target == policy.window and usage.window == 8_192
    asked, reply = conv.messages[-2], conv.messages[-1]
    assert asked.role == "user" and asked.content == text  # saved whole
    assert reply.role == "assistant" and reply.content.strip()
    assert "12345" in reply.content, reply.content
