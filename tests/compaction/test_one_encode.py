"""One tokenization per model call (issue 27): ``prepare`` encodes the prompt it sends
once, the backend evaluates those tokens as they are, and the count it reports is the
exact count of what is sent (no drift from deciding on segment sums)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from assistant.compaction.controller import ContextController
from assistant.compaction.recall import Recall
from assistant.compaction.request import CallRequest, PreparedRequest
from assistant.compaction.summary.summarizer import ExtractiveSummarizer
from assistant.config import EffectivePolicy
from assistant.conversation import Conversation, Message
from assistant.llm.base import ChatMessages, EncodedPrompt, GenerationOptions
from assistant.sessions.recall_index import MemoryIndexes
from tests.fakes.scripted import ScriptedBackend

from .helpers import SYSTEM, local_policy, tool_turn

TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the workspace.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}}]

#: ChatML with the last message marked: a template whose segments do not add up to the
#: whole prompt (each message counted alone is the last one).
MARKED_LAST = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] }}"
    "{% if loop.last %}{{ ' (latest)' }}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@dataclass
class CountingBackend(ScriptedBackend):
    """The scripted backend, counting how often a whole chat prompt (one that starts with
    the chat's system prompt and holds more than it) is rendered: to be counted, encoded,
    or evaluated. Counting one message alone (a segment) is not a whole prompt."""

    whole: int = 0

    def render_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> str:
        if len(messages) > 1 and messages[0].get("content") == SYSTEM:
            self.whole += 1
        return super().render_prompt(messages, tools)

    def take(self) -> int:
        """Whole prompts rendered since the last call."""
        got, self.whole = self.whole, 0
        return got


def _controller(
    backend: ScriptedBackend, policy: EffectivePolicy | None = None
) -> ContextController:
    pol = policy or local_policy()
    ctl = ContextController(backend, lambda: pol)
    ctl.summarizer = ExtractiveSummarizer(ctl.counter)
    ctl.recall = Recall(ctl.counter, MemoryIndexes().get)
    return ctl


def _chat() -> Conversation:
    """A fact said in several sentences, then turns with tool calls (earlier ones are
    written as notes), then a question about the fact (recall brings its sentence back)."""
    conv = Conversation()
    conv.append(Message(role="user", content=(
        "Some notes for later. Our staging server port is 12345. We deploy on Fridays.")))
    conv.append(Message(role="assistant", content="Noted."))
    for i in range(4):
        tool_turn(conv, i, size=6)
    conv.append(Message(role="user", content="Which port does the staging server use?"))
    return conv


def _send(backend: ScriptedBackend, req: PreparedRequest) -> None:
    for _event in backend.generate(
        req.messages, GenerationOptions(8), tools=TOOLS, prompt=req.prompt
    ):
        pass


def test_prepare_renders_and_tokenizes_the_prompt_once_and_generate_not_again() -> None:
    backend = CountingBackend()
    ctl = _controller(backend)
    conv = _chat()
    for turn in range(3):
        backend.take()
        req = ctl.prepare(CallRequest(conv, SYSTEM, TOOLS))
        assert backend.take() == 1, f"call {turn}: the prompt was rendered more than once"
        # What the test is about: earlier calls as notes, recall's block in the question.
        assert req.recall is not None and "12345" in req.recall.text
        assert any("[I ran read_file" in str(m.get("content")) for m in req.messages)
        assert req.prompt is not None and req.prompt.tokens is not None
        _send(backend, req)
        assert backend.take() == 0  # generate evaluated the tokens prepare made
        assert backend.calls[-1].prompt_tokens == req.prompt_tokens
        conv.append(Message(role="assistant", content=f"It is 12345 ({turn})."))
        tool_turn(conv, 10 + turn, size=3)
        conv.append(Message(role="user", content=f"And the staging server port, again {turn}?"))


def _exact(req: PreparedRequest, tools: Sequence[dict[str, Any]] | None) -> EncodedPrompt:
    fresh = ScriptedBackend()  # another backend: nothing shared with the controller's
    return fresh.encode_prompt(req.messages, tools)


def test_the_prompt_sent_is_counted_exactly_call_after_call() -> None:
    backend = ScriptedBackend()
    ctl = _controller(backend)
    conv = _chat()
    for turn in range(4):
        req = ctl.prepare(CallRequest(conv, SYSTEM, TOOLS))
        exact = _exact(req, TOOLS)
        assert req.prompt == exact
        assert req.prompt_tokens == exact.count
        assert sum(req.segments.values()) == req.prompt_tokens
        assert ctl.counter.additive  # ChatML: the sums held
        tool_turn(conv, 20 + turn, size=2)
        conv.append(Message(role="user", content=f"What is the port of staging? ({turn})"))


@pytest.mark.parametrize("first", ["prepare", "measure"])
def test_a_template_whose_pieces_do_not_add_up_is_counted_whole(first: str) -> None:
    """The sums differ from the exact count: the call (a model call's, or the context
    bar's) is made again on exact counts, as every call after it, and what is reported is
    what is sent."""
    backend = ScriptedBackend(template_source=MARKED_LAST)
    fresh = ScriptedBackend(template_source=MARKED_LAST)
    ctl = _controller(backend)
    conv = _chat()
    if first == "measure":
        shown = ctl.measure(CallRequest(conv, SYSTEM, TOOLS))
        assert not ctl.counter.additive
        assert shown.prompt_tokens == fresh.count_prompt(shown.messages, TOOLS)
    for turn in range(2):
        req = ctl.prepare(CallRequest(conv, SYSTEM, TOOLS))
        assert not ctl.counter.additive
        assert req.prompt == fresh.encode_prompt(req.messages, TOOLS)
        assert req.prompt_tokens == fresh.count_prompt(req.messages, TOOLS)
        assert req.recall is not None  # the call made again kept what it adds
        tool_turn(conv, 30 + turn, size=2)
        conv.append(Message(role="user", content="And the staging port?"))


def _position(conv: Conversation, message_id: str) -> int:
    """Where a message is in the chat (ids differ from one run to the next)."""
    return next(i for i, m in enumerate(conv.messages) if m.id == message_id)


def _session(
    backend: ScriptedBackend, *, summed: bool, policy: EffectivePolicy
) -> list[tuple[Any, ...]]:
    """What a chat that grows past its window sends, call by call."""
    ctl = _controller(backend, policy)
    ctl.counter.additive = summed
    conv = _chat()
    sent: list[tuple[Any, ...]] = []
    for turn in range(40):
        req = ctl.prepare(CallRequest(conv, SYSTEM, TOOLS))
        sent.append((
            req.messages, req.prompt_tokens, req.reserve, dict(req.segments),
            req.recall.text if req.recall else None, dict(req.trimmed),
            _position(conv, req.compaction.first_kept_id) if req.compaction else None,
            req.notices,
            req.pruned_tokens,
        ))
        tool_turn(conv, 40 + turn, size=8)
        conv.append(Message(role="user", content=f"Staging server port for batch {turn}?"))
    assert ctl.counter.additive is summed
    assert conv.compactions  # the chat did pass the window
    return sent


def test_the_same_prompts_are_sent_as_when_every_prompt_was_counted_whole() -> None:
    """Deciding on segment sums changes nothing that is sent: pruning, compaction, cuts,
    recall and the notes come out as with every prompt counted whole (the previous path,
    kept for templates whose pieces do not add up)."""
    pol = local_policy(window=3_000, reserve=300, keep_recent=800, summary_budget=300)
    summed = _session(ScriptedBackend(), summed=True, policy=pol)
    whole = _session(ScriptedBackend(), summed=False, policy=pol)
    assert summed == whole


def test_the_context_bar_between_calls_is_one_exact_encode() -> None:
    backend = CountingBackend()
    ctl = _controller(backend)
    conv = _chat()
    ctl.prepare(CallRequest(conv, SYSTEM, TOOLS))
    conv.append(Message(role="assistant", content="It is 12345."))
    backend.take()
    shown = ctl.measure(CallRequest(conv, SYSTEM, TOOLS), as_next=True)
    assert backend.take() == 1
    assert any("[I ran read_file" in str(m.get("content")) for m in shown.messages)
    assert shown.prompt == _exact(shown, TOOLS)
    assert sum(shown.segments.values()) == shown.prompt_tokens
