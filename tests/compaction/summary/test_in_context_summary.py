"""In-context summaries: written on top of the chat prompt llama.cpp already holds.

The scripted backend simulates the KV cache exactly like ``LlamaBackend`` (longest common
token prefix with the last prompt plus its reply), so ``prompt_evaluated`` here is what the
real backend would evaluate.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from assistant.compaction import context
from assistant.compaction.controller import ContextController
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.summarizer import ModelSummarizer, SummaryOutcome, SummaryRequest
from assistant.config import CompactionSwitches
from assistant.conversation import Conversation, Message
from assistant.llm.base import CancelToken, GenerationOptions
from tests.fakes.scripted import ScriptedBackend

from ..helpers import (
    FILLER_SUMMARY,
    GOOD_SUMMARY,
    SYSTEM,
    local_policy,
    repair_from,
    shown_outputs,
    tool_turn,
)

IN_CONTEXT_MARK = "Do not answer or continue the conversation above"


def _chat(turns: int = 10, size: int = 60) -> Conversation:
    conv = Conversation()
    conv.append(Message(role="user", content="Always answer in French. Never touch setup.cfg."))
    conv.append(Message(role="assistant", content="D'accord."))
    for i in range(turns):
        tool_turn(conv, i, size=size)
    return conv


class _Spy:
    def __init__(self, inner: ModelSummarizer) -> None:
        self.inner = inner
        self.outcomes: list[SummaryOutcome] = []
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        self.requests.append(request)
        out = self.inner.summarize(request, cancel)
        self.outcomes.append(out)
        return out


def _setup(
    conv: Conversation, replies: list[Any], *, prune: bool = False, extra: int = -1,
    **policy: Any,
) -> tuple[ContextController, ScriptedBackend, _Spy, Any]:
    be = ScriptedBackend(list(replies), window=20_000)
    no_prune = CompactionSwitches(prune=False)
    probe = ContextController(be, lambda: local_policy(), switches=lambda: no_prune)
    n = probe.estimate(conv, SYSTEM)
    base = local_policy(reserve=300, keep_recent=1_000, summary_budget=400, **policy)
    pol = replace(base, window=n + base.reserve + extra)
    spy = _Spy(ModelSummarizer(be))
    switches = CompactionSwitches(prune=prune)
    ctl = ContextController(be, lambda: pol, switches=lambda: switches, summarizer=spy)
    return ctl, be, spy, pol


def _send(ctl: ContextController, be: ScriptedBackend, conv: Conversation) -> None:
    """A chat call the way the agent makes it: prepare, then generate (fills the cache)."""
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    for _ in be.generate(req.messages, GenerationOptions(8)):
        pass


def test_cached_chat_is_summarized_in_context_evaluating_only_the_request() -> None:
    conv = _chat()
    ctl, be, spy, _ = _setup(conv, ["Bien.", GOOD_SUMMARY], extra=200)
    _send(ctl, be, conv)  # fits: no compaction; the chat is now in the cache
    conv.append(Message(role="user", content="Continue please, and summarize the parser."))
    ctl_pol = ctl.policy()
    ctl.policy = lambda: replace(ctl_pol, window=ctl_pol.window - 260)  # now over threshold
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.compaction is not None and req.compaction.summarizer == "model"
    out = spy.outcomes[0]
    assert out.approach == "in-context" and out.calls == 1
    call = be.calls[-1]
    # The summarizer's prompt is the chat prefix itself plus one request message.
    assert call.messages[: len(spy.requests[0].chat or [])] == spy.requests[0].chat
    assert IN_CONTEXT_MARK in call.messages[-1]["content"]
    assert call.messages[0]["content"] == SYSTEM
    assert call.result is not None
    request_tokens = be.count(call.messages[-1]["content"])
    assert call.result.prompt_evaluated <= request_tokens + 16
    assert call.result.prompt_reused > 0.8 * call.prompt_tokens
    assert out.prompt_evaluated == call.result.prompt_evaluated
    assert GOOD_SUMMARY.splitlines()[1] in req.messages[1]["content"]


def test_nothing_cached_uses_the_transcript() -> None:
    conv = _chat()
    ctl, be, spy, _ = _setup(conv, [GOOD_SUMMARY])
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "model"
    assert spy.outcomes[0].approach == "transcript"
    assert "<conversation>" in be.calls[0].messages[-1]["content"]
    assert be.calls[0].messages[0]["content"] != SYSTEM  # the summarizer's own system prompt


def test_the_prefix_shows_results_as_last_sent_not_as_pruned_since() -> None:
    """Results pruned after the last call would break the cached prefix; the summary is
    written on the prompt as it was sent (the old outputs still whole), so it stays cheap
    and sees more."""
    conv = _chat(turns=10, size=60)
    ctl, be, spy, pol = _setup(conv, ["Bien.", GOOD_SUMMARY], extra=2_000)
    _send(ctl, be, conv)
    ctl.policy = lambda: replace(pol, protect=200, minimum=50)
    assert ctl.prune(conv) > 0
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "model"
    chat = spy.requests[0].chat or []
    tool_contents = shown_outputs(chat)  # earlier turns' outputs, as the prompt showed them
    assert tool_contents and all("line" in c for c in tool_contents)  # not the placeholder
    assert spy.outcomes[0].approach == "in-context"
    assert be.calls[-1].result is not None
    assert be.calls[-1].result.prompt_reused > 0.8 * be.calls[-1].prompt_tokens
    assert any(m.pruned for m in conv.messages)  # the conversation itself is unchanged


def test_retry_reuses_the_first_attempts_prefix() -> None:
    conv = _chat()
    ctl, be, spy, pol = _setup(conv, ["Bien.", FILLER_SUMMARY, repair_from(GOOD_SUMMARY)],
                               extra=200)
    _send(ctl, be, conv)
    ctl.policy = lambda: replace(pol, window=pol.window - 260)
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "model"
    out = spy.outcomes[0]
    assert out.approach == "in-context" and out.calls == 2 and out.rejected
    retry = be.calls[-1]
    assert "said nothing specific under: Goal" in retry.messages[-1]["content"]
    assert retry.result is not None
    assert retry.result.prompt_evaluated < 0.2 * retry.prompt_tokens


def test_twice_rejected_in_context_falls_back_to_extractive() -> None:
    conv = _chat()
    ctl, be, spy, pol = _setup(conv, ["Bien.", FILLER_SUMMARY, repair_from(FILLER_SUMMARY)],
                               extra=200)
    _send(ctl, be, conv)
    ctl.policy = lambda: replace(pol, window=pol.window - 260)
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "extractive"
    assert spy.outcomes[0].approach == "in-context" and spy.outcomes[0].calls == 2
    assert "Always answer in French." in rec.summary


def test_span_that_does_not_fit_beside_the_reply_uses_the_transcript() -> None:
    conv = _chat(turns=12, size=30)
    be = ScriptedBackend(["Bien.", GOOD_SUMMARY, GOOD_SUMMARY, GOOD_SUMMARY], window=20_000)
    summarizer = ModelSummarizer(be)
    chat = context.to_openai(context.build_context(conv, SYSTEM, kept=conv.kept_messages()))
    for _ in be.generate(chat, GenerationOptions(4)):
        pass
    tokens = be.count_prompt(chat)
    from assistant.compaction.file_tracking import extract_file_ops
    from assistant.compaction.summary.extractive import collect_state

    kept = conv.kept_messages()
    state = collect_state(kept, extract_file_ops(kept, None), last_request_visible=False)
    request = SummaryRequest(
        history=kept, turn_prefix=(), previous=None, focus=None, budget=400, state=state,
        window=tokens + 200, chat=chat,
    )
    out = summarizer.summarize(request, None)
    assert out.approach == "transcript" and out.kind == "model"
    assert all(c.prompt_tokens + c.max_tokens <= tokens + 200 for c in be.calls[1:])
