"""User constraints survive repeated compactions, even with a small summary budget."""

from __future__ import annotations

from assistant.compaction.controller import ContextController
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.summarizer import ExtractiveSummarizer
from assistant.compaction.tokens import TokenCounter
from assistant.config import Settings
from assistant.conversation import Conversation, Message
from tests.fakes.scripted import ScriptedBackend

RULES = (
    "Ground rules for this whole chat: Never use tabs for indentation, always use four "
    "spaces. Always write dates as YYYY-MM-DD. Keep every answer under 60 words."
)
PROBES = ("never use tabs", "yyyy-mm-dd", "under 60 words")


def test_constraints_stated_first_survive_many_compactions() -> None:
    backend = ScriptedBackend(window=2_048, trained_context=2_048)
    policy = Settings().effective_policy(2_048)
    assert policy.summary_budget < 200  # a tight budget is the point of this test
    ctl = ContextController(
        backend, lambda: policy, summarizer=ExtractiveSummarizer(TokenCounter(backend))
    )
    conv = Conversation()
    compactions = 0
    for turn in range(40):
        text = RULES if turn == 0 else f"Turn {turn}: tell me more about topic {turn}. " * 6
        conv.append(Message(role="user", content=text))
        prepared = ctl.prepare(CallRequest(conv, "sys"))
        compactions += prepared.compaction is not None
        assert prepared.prompt_tokens + policy.reserve <= policy.window
        conv.append(Message(role="assistant", content="A reply about the topic. " * 8))
    final = ctl.prepare(CallRequest(conv, "sys"))
    seen = " ".join(m["content"] for m in final.messages).lower()
    assert compactions >= 3
    assert conv.messages[0].content == RULES  # the original is never rewritten
    for probe in PROBES:
        assert probe in seen, f"constraint {probe!r} lost after {compactions} compactions"


def test_constraints_and_paths_survive_in_a_tiny_window() -> None:
    """At a 1,280-token window the summary budget is 128 tokens, 40 of them for the header:
    when the summary falls back to the extractive one, the verbatim record gets the room."""
    from assistant.conversation import ToolCall

    backend = ScriptedBackend(window=1_280, trained_context=1_280)
    policy = Settings().effective_policy(1_280)
    assert policy.summary_budget <= 128
    ctl = ContextController(
        backend, lambda: policy, summarizer=ExtractiveSummarizer(TokenCounter(backend))
    )
    conv = Conversation()
    paths = ("src/core/nested_route.py", "notes/decisions.md")
    compactions = 0
    for turn in range(24):
        if turn == 0:
            conv.append(Message(role="user", content=RULES + " Now, what is in the router?"))
        else:
            conv.append(Message(role="user", content=f"Turn {turn}: and what about part {turn}?"))
        if turn in (0, 1):
            tool = "read_file" if turn == 0 else "write_file"
            args = {"path": paths[turn]} | ({"content": "- dates"} if turn == 1 else {})
            call = ToolCall(name=tool, arguments=args)
            conv.append(Message(role="assistant", tool_calls=[call]))
            conv.append(Message(role="tool", tool_call_id=call.id, name=tool,
                                content="def route(x):\n    return x\n" * 20))
        prepared = ctl.prepare(CallRequest(conv, "sys"))
        compactions += prepared.compaction is not None
        conv.append(Message(role="assistant", content="A reply about that part. " * 6))
    final = ctl.prepare(CallRequest(conv, "sys"))
    seen = " ".join(m["content"] for m in final.messages).lower()
    assert compactions >= 2
    for probe in (*PROBES, *paths):
        assert probe in seen, f"{probe!r} lost after {compactions} compactions"
