"""The context bar's numbers: how the prompt about to be sent splits into segments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assistant.agent.events import ContextUsage
from assistant.compaction.controller import PreparedRequest
from assistant.conversation import Conversation
from assistant.llm.base import LLMBackend


def context_usage(
    prepared: PreparedRequest,
    conv: Conversation,
    backend: LLMBackend,
    tools: Sequence[dict[str, Any]] | None,
    reserve: int,
) -> ContextUsage:
    """Segments come from the controller when it reports them (a ``segments`` mapping on
    the prepared request); else they are measured with the backend's template: the system
    message alone, the tool schemas as the difference they make to it, the summary message
    as the difference it makes, and the conversation as the rest of the exact total."""
    total = prepared.prompt_tokens
    given = getattr(prepared, "segments", None)
    if isinstance(given, dict) and given:
        segments = {str(k): int(v) for k, v in given.items()}
    else:
        segments = _measure(prepared.messages, conv, backend, tools, total)
    return ContextUsage(
        prompt_tokens=total, window=prepared.window, reserve=reserve, segments=segments
    )


def _measure(
    messages: list[dict[str, Any]],
    conv: Conversation,
    backend: LLMBackend,
    tools: Sequence[dict[str, Any]] | None,
    total: int,
) -> dict[str, int]:
    if not messages or messages[0].get("role") != "system":
        return {"system": 0, "summary": 0, "conversation": total, "tools": 0}
    head = [messages[0]]
    system = backend.count_prompt(head)
    tool_tokens = max(0, backend.count_prompt(head, tools) - system) if tools else 0
    summary = 0
    if conv.last_compaction is not None and len(messages) > 1:
        summary = max(0, backend.count_prompt([*head, messages[1]]) - system)
    system = min(system, total)
    tool_tokens = min(tool_tokens, total - system)
    summary = min(summary, total - system - tool_tokens)
    conversation = total - system - tool_tokens - summary
    return {
        "system": system,
        "summary": summary,
        "conversation": conversation,
        "tools": tool_tokens,
    }
