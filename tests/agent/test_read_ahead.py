"""The read-ahead (``Agent.read_ahead``): the prompt a draft would make, evaluated into the
engine's cache while the user types, changing nothing else (the conversation, the
controller's memos, recall's memo and index, the focus anchor; no event, no compaction)."""

from __future__ import annotations

from typing import Any

from assistant.agent.events import AgentEvent
from assistant.agent.loop import Agent
from assistant.compaction.context_render import FOCUS_TOKENS
from assistant.compaction.controller import ContextController
from assistant.config import Settings
from assistant.conversation import Conversation, Message
from assistant.llm.base import CancelToken, GenerationResult
from assistant.llm.transcript_recall import UNLABELED_HEADING
from assistant.tools.registry import ToolRegistry
from tests.compaction.test_recall import SYSTEM, _controller, _long_chat
from tests.fakes.scripted import RecordedCall, ScriptedBackend

#: The second's last word does not change what recall finds ("shelf 5" is in the draft).
QUESTIONS = ["What is the crate count of shelf 3?", "And the crate count of shelf 5, again?"]


class Chat:
    """A long chat (compacted, facts out of the kept messages: recall brings them back,
    the history beside them focused) driven through the agent."""

    def __init__(self) -> None:
        self.ctrl, _ = _controller()
        self.ctrl.focus_tokens = lambda: FOCUS_TOKENS
        self.conv = _long_chat(self.ctrl)
        backend = self.ctrl.backend
        assert isinstance(backend, ScriptedBackend)
        self.backend = backend
        self.events: list[AgentEvent] = []
        settings = Settings(system_prompt=SYSTEM)
        self.agent = Agent(backend, self.ctrl, ToolRegistry.default(), lambda: settings, None,
                           self.events.append)
        self.ctrl.on_event = self.agent.on_context_event

    def send(self, text: str) -> RecordedCall:
        self.backend.enqueue("That shelf holds many crates, as the notes say.")
        self.agent.chat(self.conv, text)
        return self.backend.calls[-1]

    def state(self) -> tuple[Any, ...]:
        """What a read-ahead must leave as it was (the facts memo, a cache of the chat's
        current state that the send computes alike, is not compared)."""
        ctrl = self.ctrl
        assert ctrl.recall is not None
        return (
            [m.model_dump() for m in self.conv.messages], len(self.conv.compactions),
            ctrl._memo.copy(), ctrl.recall._last, ctrl.recall._synced,
        )


def _draft(text: str) -> str:
    return text.rsplit(" ", 1)[0]


def test_a_read_ahead_between_two_sends_changes_nothing_and_the_send_finds_it_cached() -> None:
    plain, ahead = Chat(), Chat()
    for chat in (plain, ahead):
        chat.send(QUESTIONS[0])
    before = ahead.state()
    n_events = len(ahead.events)
    got = ahead.agent.read_ahead(ahead.conv, _draft(QUESTIONS[1]))
    assert got is not None and got.finished and got.evaluated > 0
    assert ahead.state() == before
    assert len(ahead.events) == n_events  # no event at all
    index = ahead.ctrl.recall.index_for(ahead.conv) if ahead.ctrl.recall else None
    assert index is not None and not any(  # the draft is not in the chat's index
        _draft(QUESTIONS[1]) in h.text for h in index.search('"crate"', limit=50))

    sent = [chat.send(QUESTIONS[1]) for chat in (plain, ahead)]
    # The send's prompt is byte for byte the one without the read-ahead ...
    assert sent[1].prompt_text == sent[0].prompt_text
    assert sent[1].messages == sent[0].messages
    # ... its excerpts were the draft's (the read-ahead warmed the same prompt, the last
    # word and the template's end excepted) ...
    warmed = ahead.backend.warms[-1]
    assert warmed.prompt_text == sent[1].prompt_text.replace(QUESTIONS[1], _draft(QUESTIONS[1]))
    assert UNLABELED_HEADING in warmed.prompt_text  # recall's excerpts, as a chat model sees them
    # ... and only what follows the draft was evaluated at the send.
    done: list[GenerationResult] = [s.result for s in sent if s.result is not None]
    assert len(done) == 2
    ahead_tokens, sent_tokens = (ahead.backend.tokenize(t) for t in (warmed.prompt_text,
                                                                      sent[1].prompt_text))
    shared = next(i for i, (a, b) in enumerate(zip(ahead_tokens, sent_tokens, strict=False))
                  if a != b)
    assert done[1].prompt_evaluated == len(sent_tokens) - shared < done[0].prompt_evaluated
    # What was left is the question's last word and the template's end (a token or two of
    # slack where the word's tokens join the text before it).
    last_word = QUESTIONS[1].rsplit(" ", 1)[1]
    after = sent[1].prompt_text.split(QUESTIONS[1], 1)[1]
    tokenize = ahead.backend.tokenize
    assert done[1].prompt_evaluated <= len(tokenize(" " + last_word)) + len(tokenize(after)) + 2
    assert done[1].prompt_tokens == done[0].prompt_tokens
    assert [m.content for m in ahead.conv.messages] == [m.content for m in plain.conv.messages]


def test_a_draft_that_would_compact_or_be_refused_is_not_read_and_nothing_compacts() -> None:
    chat = Chat()
    chat.send(QUESTIONS[0])
    before = chat.state()
    # Pushes the prompt past the threshold: the send would compact, the read-ahead does not.
    long = " ".join(f"clause {i} of the contract says nothing new." for i in range(120))
    assert chat.agent.read_ahead(chat.conv, long) is None
    refused = "word " * 20_000  # larger than the window: the send refuses it
    assert chat.agent.read_ahead(chat.conv, refused) is None
    assert chat.agent.read_ahead(chat.conv, "   ") is None
    assert chat.backend.warms == [] and chat.state() == before
    # The same long draft sent: the send does compact (so the read-ahead had reason to stop).
    chat.agent.chat(chat.conv, long)
    assert len(chat.conv.compactions) > before[1]


def test_a_cancelled_read_ahead_warms_nothing_and_an_engine_without_warm_is_skipped() -> None:
    chat = Chat()
    chat.send(QUESTIONS[0])
    cancel = CancelToken()
    cancel.cancel()
    assert chat.agent.read_ahead(chat.conv, _draft(QUESTIONS[1]), cancel) is None
    assert chat.backend.warms == []

    class Cold(ScriptedBackend):  # no read-ahead: isinstance(..., PromptWarmer) is False
        warm = None  # type: ignore[assignment]

    cold = Cold()
    agent = Agent(cold, ContextController(cold, chat.ctrl.policy), ToolRegistry.default(),
                  lambda: Settings(), None, lambda _e: None)
    conv = Conversation(messages=[Message(role="user", content="hi")])
    assert agent.read_ahead(conv, "Hello there") is None
