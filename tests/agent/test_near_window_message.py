"""A user message nearly the size of the window, after a turn with a tool call.

The agent, the real context controller and the scripted backend (cl100k counts, a
3,000-token window that raises ContextOverflowError like the real one). The summary is the
extractive one, so every scripted reply is the chat's. The service refuses a new message
that cannot fit beside the smallest summary (``message_fit``); a chat can still hold one
(imported, or answered after the window shrank), which ``respond`` answers here.
"""

from __future__ import annotations

from pathlib import Path

from assistant.agent.events import Notice, TurnFinished
from assistant.compaction.controller import ContextController
from assistant.compaction.request import CallRequest
from assistant.compaction.summary import ExtractiveSummarizer
from assistant.compaction.tokens import TokenCounter
from assistant.config import Settings
from assistant.conversation import Message
from tests.compaction.helpers import local_policy
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness

WINDOW = 3_000
POLICY = local_policy(window=WINDOW, protect=500, minimum=100, reserve=400, keep_recent=800,
                      summary_budget=400)
READ = '<tool_call>{"name": "read_file", "arguments": {"path": "notes.txt"}}</tool_call>'


def _after_a_tool_call(settings: Settings, workspace: Path) -> tuple[Harness, ScriptedBackend]:
    """A chat whose first turn read a file, answered."""
    (workspace / "notes.txt").write_text("alpha beta gamma\n" * 200)
    backend = ScriptedBackend([READ, "The notes list alpha, beta and gamma.", "Answered."],
                              window=WINDOW)
    ctl = ContextController(backend, lambda: POLICY,
                            summarizer=ExtractiveSummarizer(TokenCounter(backend)))
    h = Harness(settings, backend=backend, controller=ctl)
    h.say("What is in notes.txt?")
    assert h.roles() == ["user", "assistant", "tool", "assistant"]
    return h, backend


def _message(h: Harness, tokens: int) -> str:
    """A user message of ``tokens`` tokens as the prompt shows it."""
    count = h.controller.counter.message
    n = tokens // 2
    while count(Message(role="user", content=_words(n))) < tokens:
        n += 1
    return _words(n)


def _words(n: int) -> str:
    return " ".join(f"w{i % 7}" for i in range(n))


def _user_texts(messages: list[dict[str, object]]) -> list[object]:
    return [m["content"] for m in messages if m["role"] == "user"]


def test_the_largest_message_accepted_is_answered_whole_with_the_reply_room(
    settings: Settings, workspace: Path
) -> None:
    h, backend = _after_a_tool_call(settings, workspace)
    call = CallRequest(h.conv, settings.system_prompt, h.agent.registry.schemas())
    room = h.controller.message_fit(call, "x").room
    n = room
    while not h.controller.message_fit(call, _words(n)).fits:
        n -= 1
    text = _words(n)
    h.say(text)
    sent = backend.calls[-1]
    assert h.roles()[-2:] == ["user", "assistant"]
    assert h.conv.messages[-2].content == text  # kept in the chat
    assert text in _user_texts(sent.messages)  # and shown to the model whole
    assert sent.prompt_tokens + POLICY.reserve <= WINDOW
    assert sent.max_tokens == POLICY.reserve
    assert h.conv.compactions  # the earlier turn was summarized to make room
    assert not [n for n in h.events.of(Notice) if n.level in ("warning", "error")]


def test_a_message_leaving_less_than_the_smallest_summary_is_answered_whole(
    settings: Settings, workspace: Path
) -> None:
    """It used to be summarized into the record (the model saw 1,056 of its 2,300 tokens);
    now the summary shrinks to the smallest and the reply gets what is left, with a note."""
    h, backend = _after_a_tool_call(settings, workspace)
    text = _message(h, 2_300)
    h.conv.append(Message(role="user", content=text))
    h.agent.respond(h.conv)
    sent = backend.calls[-1]
    assert text in _user_texts(sent.messages)
    assert sent.prompt_tokens < WINDOW
    assert 0 < sent.max_tokens < POLICY.reserve
    assert sent.max_tokens == WINDOW - sent.prompt_tokens
    assert [m.role for m in h.conv.messages[-2:]] == ["user", "assistant"]
    assert h.conv.messages[-1].content == "Answered."
    record = h.conv.compactions[-1]
    assert backend.count(record.summary) <= 120  # the smallest summary
    notes = [n.text for n in h.events.of(Notice) if n.level == "warning"]
    assert any("leaves less than the reserve" in t for t in notes)


def test_a_message_too_large_for_any_summary_beside_it_gets_the_overflow_message(
    settings: Settings, workspace: Path
) -> None:
    """With a longer system prompt not even the smallest summary fits beside the message:
    it is not cut into a record; one model call is refused (before any token is read), the
    user is told what does not fit, and the message stays in the chat."""
    settings.system_prompt += " Be brief." * 150
    h, backend = _after_a_tool_call(settings, workspace)
    text = _message(h, 2_300)
    h.conv.append(Message(role="user", content=text))
    calls = len(backend.calls)
    h.agent.respond(h.conv)
    assert len(backend.calls) == calls + 1  # one refused call: no retry loop
    assert backend.calls[-1].result is None  # refused before it was read
    errors = [n.text for n in h.events.of(Notice) if n.level == "error"]
    assert len(errors) == 1
    assert "The newest message is too long for this window" in errors[0]
    # Only that: no note that the prompt "leaves less than the reserve" (it leaves none).
    assert not [n for n in h.events.of(Notice) if n.level == "warning"]
    assert h.events.of(TurnFinished)[-1].error == errors[0]
    assert h.conv.messages[-1].role == "user" and h.conv.messages[-1].content == text
    assert not h.conv.compactions  # nothing of the message went into a summary
