"""User constraints survive repeated compactions, even with a small summary budget."""

from __future__ import annotations

from assistant.compaction.controller import ContextController
from assistant.compaction.summarizer import ExtractiveSummarizer
from assistant.compaction.tokens import TokenCounter
from assistant.config import Settings
from assistant.conversation import Conversation, Message
from assistant.llm.fake import ScriptedBackend

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
        prepared = ctl.prepare(conv, system_prompt="sys")
        compactions += prepared.compaction is not None
        assert prepared.prompt_tokens + policy.reserve <= policy.window
        conv.append(Message(role="assistant", content="A reply about the topic. " * 8))
    final = ctl.prepare(conv, system_prompt="sys")
    seen = " ".join(m["content"] for m in final.messages).lower()
    assert compactions >= 3
    assert conv.messages[0].content == RULES  # the original is never rewritten
    for probe in PROBES:
        assert probe in seen, f"constraint {probe!r} lost after {compactions} compactions"
