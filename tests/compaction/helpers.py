"""Shared builders for the compaction tests."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from assistant.compaction.controller import ContextController
from assistant.compaction.events import ContextEvent
from assistant.compaction.summary.clean import parse_sections
from assistant.compaction.summary.grammar import SKELETON
from assistant.config import EffectivePolicy, default_local
from assistant.conversation import Conversation, Message, ToolCall
from tests.fakes.scripted import ScriptedBackend

SYSTEM = "You are a test assistant."

#: A summary a model under the summary grammar could write about conversations made of
#: :func:`tool_turn` turns: one short bullet per section (it fits the grammar at any
#: budget), naming their files and words so it passes validation.
GOOD_SUMMARY = """## Goal
- Answer questions about src/file_0.py

## Constraints & Preferences
- Four spaces for indentation

## Progress
### Done
- Read src/file_0.py
### In Progress
- Answer about src/file_0.py
### Blocked
- none

## Key Decisions
- Read src/file_0.py whole

## Next Steps
- Read the next file

## Critical Context
- src/file_0.py has words"""


#: What a model under the grammar writes when it has nothing to say: every heading, no
#: content (validation rejects it: the Goal names nothing from the conversation).
FILLER_SUMMARY = """## Goal
- The user wants to continue.

## Constraints & Preferences
- none

## Progress
### Done
- Nothing yet.
### In Progress
- The assistant will continue.
### Blocked
- none

## Key Decisions
- none

## Next Steps
- Continue the work.

## Critical Context
- none"""


def repair_from(summary: str) -> Callable[[list[dict[str, Any]]], str]:
    """A scripted reply to a repair request (:mod:`assistant.compaction.summary.repair`): the
    sections it asks for, taken from ``summary``, in the shape of their grammar."""
    def reply(msgs: list[dict[str, Any]]) -> str:
        asked = re.search(r"said nothing specific under: (.+?)\. Write only", msgs[-1]["content"])
        assert asked is not None, "not a repair request"
        names = asked.group(1).split(", ")
        sections = parse_sections(summary)
        parts = []
        for sec in SKELETON:
            if sec.name in names:
                lead = "" if not parts else ("\n" if sec.heading.startswith("###") else "\n\n")
                items = "\n".join("- " + line for line in sections.get(sec.name, ["none"]))
                parts.append(f"{lead}{sec.heading}\n{items}")
        return "".join(parts)

    return reply


def writes(summary: str) -> Callable[[list[dict[str, Any]]], str]:
    """A scripted model that writes ``summary`` when asked for a whole summary and its
    sections when asked for some again."""
    repair = repair_from(summary)

    def reply(msgs: list[dict[str, Any]]) -> str:
        return repair(msgs) if "said nothing specific under:" in msgs[-1]["content"] \
            else summary

    return reply


def local_policy(**changes: Any) -> EffectivePolicy:
    return replace(default_local().effective("local", None), **changes)


def tool_turn(
    conv: Conversation, i: int, *, size: int = 1, tool: str = "read_file", path: str | None = None
) -> tuple[Message, Message, Message, Message]:
    """user -> assistant(tool call) -> tool result -> assistant answer."""
    p = path or f"src/file_{i}.py"
    user = conv.append(Message(role="user", content=f"Question {i} about {p}."))
    call = ToolCall(name=tool, arguments={"path": p})
    asst = conv.append(Message(role="assistant", content="", tool_calls=[call]))
    body = f"line {i} of the file with some words in it\n" * size
    res = conv.append(Message(role="tool", tool_call_id=call.id, name=tool, content=body))
    ans = conv.append(Message(role="assistant", content=f"Answer {i}."))
    return user, asst, res, ans


def controller(
    backend: ScriptedBackend | None = None,
    policy: EffectivePolicy | None = None,
    **kwargs: Any,
) -> tuple[ContextController, ScriptedBackend, list[ContextEvent]]:
    be = backend or ScriptedBackend()
    pol = policy or local_policy()
    events: list[ContextEvent] = []
    ctl = ContextController(be, lambda: pol, on_event=events.append, **kwargs)
    return ctl, be, events


CONSTRAINTS = [
    "Always answer in British English.",
    "Never modify files under vendor/.",
    "You must keep the public API of parser.py stable.",
]
PLANTED_PATHS = ["src/billing/invoice.py", "docs/ARCHITECTURE_NOTES.md", "config/limits.toml"]


def file_body(i: int, lines: int = 120) -> str:
    """A file-sized tool output (about 1,500 tokens at 120 lines)."""
    return "\n".join(
        f"def function_{i}_{n}(value):  # line {n} of module {i}\n    return value + {n}"
        for n in range(lines // 2)
    )


def session_transcript(turns: int = 30, lines: int = 120) -> list[dict[str, Any]]:
    """OpenAI-format messages: constraints and paths planted early, file reads each turn."""
    out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for i in range(turns):
        text = f"Turn {i}: please read the next file and tell me what it does."
        if i < len(CONSTRAINTS):
            text = f"{CONSTRAINTS[i]} {text}"
        path = PLANTED_PATHS[i] if i < len(PLANTED_PATHS) else f"src/module_{i}.py"
        out.append({"role": "user", "content": text})
        out.append({
            "role": "assistant", "content": "",
            "tool_calls": [{"id": f"call_{i}", "type": "function", "function": {
                "name": "read_file", "arguments": f'{{"path": "{path}"}}'}}],
        })
        out.append({"role": "tool", "tool_call_id": f"call_{i}", "name": "read_file",
                    "content": file_body(i, lines)})
        out.append({"role": "assistant", "content": f"File {path} defines simple helpers."})
    return out


def long_message(backend: ScriptedBackend, tokens: int) -> str:
    """A pasted log of many short lines, about ``tokens`` tokens, ending with the question."""
    lines: list[str] = []
    i = 0
    while backend.count("\n".join(lines)) < tokens:
        lines.append(f"{i:04d} worker-{i % 7} handled request id={i * 37} in {i % 90} ms")
        i += 1
    lines.append("Which worker handled request id=74 and how long did it take?")
    return "\n".join(lines)


def shown_outputs(messages: list[dict[str, Any]]) -> list[str]:
    """The tool outputs a prompt shows the model, in order: the latest turn's as tool
    messages, earlier turns' as the ``[Output of ...]`` messages of
    :mod:`assistant.compaction.context_render` (the output after the note line)."""
    out = []
    for m in messages:
        text = str(m.get("content") or "")
        if m.get("role") == "tool":
            out.append(text)
        elif m.get("role") == "user" and text.startswith("[Output of "):
            out.append(text.partition("\n")[2])
    return out
