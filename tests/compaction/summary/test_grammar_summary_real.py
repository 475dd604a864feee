"""With the real embedded model (SmolLM2-135M): a full local window is summarized under the
summary grammar and the summary passes validation; a second compaction updates it under the
grammar and is accepted too. What is checked is the part the model wrote (the record code
appends after it is checked apart), so the test cannot pass on the code's work alone.

The chat is the one the issue measured: a user who states rules and asks for files to be
read, file-sized tool outputs and the assistant's answers, until the local window is full
(the threshold compaction of a real chat call). Work is bounded by tokens: every summary
is at most the policy's summary budget, the chat is a fixed number of turns.
"""

from __future__ import annotations

from typing import Any

import pytest

from assistant.compaction.controller import ContextController
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.grammar import follows_skeleton
from assistant.compaction.summary.summarizer import ModelSummarizer, SummaryOutcome, SummaryRequest
from assistant.config import CompactionSwitches, default_local
from assistant.conversation import Conversation, Message, ToolCall
from assistant.llm.base import CancelToken

from ..helpers import CONSTRAINTS, PLANTED_PATHS, SYSTEM, file_body

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class _Spy:
    def __init__(self, inner: ModelSummarizer) -> None:
        self.inner = inner
        self.outcomes: list[SummaryOutcome] = []
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        self.requests.append(request)
        self.outcomes.append(self.inner.summarize(request, cancel))
        return self.outcomes[-1]


def _turn(conv: Conversation, i: int) -> None:
    text = f"Turn {i}: please read the next file and tell me what it does."
    if i < len(CONSTRAINTS):
        text = f"{CONSTRAINTS[i]} {text}"
    path = PLANTED_PATHS[i] if i < len(PLANTED_PATHS) else f"src/module_{i}.py"
    conv.append(Message(role="user", content=text))
    call = ToolCall(name="read_file", arguments={"path": path})
    conv.append(Message(role="assistant", tool_calls=[call]))
    conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                        content=file_body(i, 120)))
    conv.append(Message(role="assistant", content=(
        f"{path} defines small pure helper functions that add a constant to a value.")))


def _fill(ctl: ContextController, conv: Conversation, start: int) -> int:
    """Turns appended from ``start`` until a chat call compacts; the next turn index."""
    i = start
    while True:
        _turn(conv, i)
        i += 1
        req = ctl.prepare(CallRequest(conv, SYSTEM))
        if req.compaction is not None:
            return i
        assert i < start + 12, "the local window never filled"


# The work is bounded by tokens (two compactions, each at most two replies of the summary
# budget); the timeout only guards against a hang on a loaded shared machine, where one
# compaction took 4-9 minutes (the default 600 s is per test).
@pytest.mark.timeout(2_400)
def test_full_window_summary_under_the_grammar_is_accepted_and_then_updated(
    real_backend: Any,
) -> None:
    policy = default_local().effective("local", real_backend.info.trained_context)
    spy = _Spy(ModelSummarizer(real_backend))
    no_prune = CompactionSwitches(prune=False)
    ctl = ContextController(real_backend, lambda: policy, switches=lambda: no_prune, summarizer=spy)
    conv = Conversation()

    nxt = _fill(ctl, conv, 0)
    first = conv.compactions[-1]
    out = spy.outcomes[-1]
    assert spy.requests[-1].previous is None
    assert out.grammar, out.note  # SmolLM2's vocabulary follows the grammar
    assert first.summarizer == "model", (first.rejected, out.text)
    assert follows_skeleton(out.text)
    # What the model itself wrote (not the record code appends after it) names the
    # conversation's own files.
    assert any(p in out.text for p in PLANTED_PATHS), out.text
    said = " ".join(m.content for m in spy.requests[-1].history if m.role == "user")
    summarized_rules = [rule for rule in CONSTRAINTS if rule in said]
    assert summarized_rules
    for rule in summarized_rules:  # the verbatim user record is code's, and kept
        assert rule in first.summary

    _fill(ctl, conv, nxt)
    second = conv.compactions[-1]
    out = spy.outcomes[-1]
    assert spy.requests[-1].previous is not None  # the update prompt with the summary
    assert out.grammar, out.note
    # The update is the model's too, and what the model wrote names the chat's files.
    assert second.summarizer == "model", (second.rejected, out.text)
    assert any(p in out.text for p in PLANTED_PATHS), out.text
    for rule in summarized_rules:  # carried into the updated summary
        assert rule in second.summary
    print({"first": first.duration_s, "second": second.duration_s,
           "rejected": [first.rejected, second.rejected]})
    print(first.summary, second.summary, sep="\n-----\n")
