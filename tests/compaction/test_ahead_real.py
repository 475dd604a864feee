"""Compaction ahead of time on the real model: the summary is written by the model and the
chat's KV cache is put back afterwards, so the next turn reuses the chat's prompt. (That
the summary is then used at the threshold: tests/compaction/test_ahead.py, scripted, and
``python -m bench.compaction_wait`` on the real model.)"""

from __future__ import annotations

from typing import Any

import pytest

from assistant.compaction.controller import ContextController
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.summarizer import SummaryOutcome, SummaryRequest
from assistant.config import CompactionSwitches
from assistant.conversation import Conversation, Message
from assistant.llm.base import CancelToken, GenerationOptions

from .helpers import SYSTEM, local_policy

pytestmark = pytest.mark.integration

POLICY = local_policy(window=1400, reserve=200, protect=200, minimum=50, keep_recent=300,
                      summary_budget=400)


class OneLine:
    """A summarizer that asks the real model for one short line on top of the chat's prompt
    (bounded work; what matters here is that it changes llama.cpp's cache)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        assert request.chat is not None
        msgs = [*request.chat, {"role": "user", "content": "Summarize the chat in one line."}]
        text = "".join(ev.delta for ev in self.backend.generate(
            msgs, GenerationOptions(12, temperature=0.0), cancel=cancel))
        return SummaryOutcome(text=text, kind="model", calls=1)


def _turn(conv: Conversation, i: int) -> None:
    conv.append(Message(role="user", content=(
        f"Note {i}: host web-{i} restarted after {i * 7} s and logged code E{100 + i}. "
        f"Which code did web-{i} log?")))
    conv.append(Message(role="assistant", content=f"web-{i} logged E{100 + i}."))


def test_the_summary_written_ahead_keeps_the_chat_cache(real_backend: Any) -> None:
    backend = real_backend
    backend.reset_kv_cache()
    no_prune = CompactionSwitches(prune=False)
    ctl = ContextController(backend, lambda: POLICY, switches=lambda: no_prune,
                            summarizer=OneLine(backend))
    conv = Conversation()
    i = 0
    while ctl.measure(CallRequest(conv, SYSTEM)).prompt_tokens < 0.75 * (1400 - 200):
        _turn(conv, i)
        i += 1
    # The chat's last call: its prompt is what llama.cpp holds.
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.compaction is None
    for _ in backend.generate(req.messages, GenerationOptions(1), cancel=CancelToken()):
        pass
    held = backend.cached_tokens()
    got = ctl.precompute(CallRequest(conv, SYSTEM))
    assert got is not None and got.outcome.text  # the model wrote on top of the chat
    # Put back: the next turn reuses the chat's prompt as if nothing had run.
    assert backend.cached_tokens() == held
    _turn(conv, i)
    nxt = ctl.prepare(CallRequest(conv, SYSTEM))
    tokens = backend.tokenize_prompt(backend.render_prompt(nxt.messages))
    common = 0
    while common < min(len(held), len(tokens)) and held[common] == tokens[common]:
        common += 1
    assert common > 0.9 * len(held)  # the chat's prompt, up to the reply's last tokens
    assert backend.cached_prefix(tokens) >= min(common, len(tokens) - 1)
