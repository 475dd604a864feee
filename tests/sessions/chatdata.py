"""Chat data and prompt rendering shared by the session tests."""

from __future__ import annotations

from assistant.compaction.controller import ContextController
from assistant.config import Settings
from assistant.conversation import CompactionRecord, Conversation, Message, ToolCall
from tests.fakes.scripted import ScriptedBackend

SYSTEM_PROMPT = "You are a test assistant."


def fill_chat(conv: Conversation) -> None:
    """User turns, a tool call with results, a prune and a compaction, like a real chat."""
    conv.append(Message(role="user", content="Please read notes.txt and summarize it."))
    call = ToolCall(name="read_file", arguments={"path": "notes.txt"})
    conv.append(Message(role="assistant", content="", tool_calls=[call]))
    result = conv.append(
        Message(
            role="tool",
            tool_call_id=call.id,
            name="read_file",
            content="line one\nline two ```code```\n" * 40,
        )
    )
    conv.append(Message(role="assistant", content="The notes list two lines, repeated."))
    conv.append(Message(role="user", content="Now write summary.md with that — ünïcödé ✓"))
    wcall = ToolCall(name="write_file", arguments={"path": "summary.md", "content": "two lines"})
    conv.append(Message(role="assistant", tool_calls=[wcall]))
    conv.append(Message(role="tool", tool_call_id=wcall.id, name="write_file", content="ok"))
    conv.mark_pruned([result.id], tokens_freed=300)
    kept = conv.append(Message(role="assistant", content="Done: summary.md written."))
    conv.add_compaction(
        CompactionRecord(
            summary="## Goal\nSummarize notes.txt into summary.md.",
            first_kept_id=kept.id,
            tokens_before=900,
            tokens_after=200,
            reason="threshold",
            count=1,
            files_read=["notes.txt"],
            files_modified=["summary.md"],
        )
    )
    conv.append(Message(role="user", content="Thanks! Anything else?"))
    conv.append(Message(role="assistant", content="No, all done.", stopped=True))


def raw_prompt_tokens(conv: Conversation) -> list[int]:
    """Tokens of the messages alone, as the model sees them (pruned contents cleared)."""
    backend = ScriptedBackend()
    return backend.tokenize(backend.render_prompt([m.to_openai() for m in conv.messages]))


def model_prompt_tokens(conv: Conversation) -> list[int]:
    """Tokens of the full prompt the controller builds (system + summary + kept)."""
    backend = ScriptedBackend()
    controller = ContextController(backend, lambda: Settings().effective_policy(None))
    msgs = [m.to_openai() for m in controller.build_messages(conv, SYSTEM_PROMPT)]
    return backend.tokenize(backend.render_prompt(msgs))
