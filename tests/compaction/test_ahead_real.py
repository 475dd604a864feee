"""Compaction ahead of time on the real model: the summary is written on top of the chat's
cached prompt, the chat's KV cache is put back afterwards (the next turn reuses it), and
the compaction at the threshold uses the summary without asking the model again."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.compaction.controller import ContextController
from assistant.conversation import Conversation, Message
from assistant.llm.base import CancelToken, GenerationOptions

from .helpers import SYSTEM, local_policy

pytestmark = pytest.mark.integration

POLICY = local_policy(window=1400, reserve=200, protect=200, minimum=50, keep_recent=300,
                      summary_budget=400)


def _turn(conv: Conversation, i: int) -> None:
    conv.append(Message(role="user", content=(
        f"Note {i}: host web-{i} restarted after {i * 7} s and logged code E{100 + i}. "
        f"Which code did web-{i} log?")))
    conv.append(Message(role="assistant", content=f"web-{i} logged E{100 + i}."))


def test_the_summary_written_ahead_keeps_the_chat_cache(real_backend: Any) -> None:
    backend = real_backend
    backend.reset_kv_cache()
    ctl = ContextController(backend, lambda: POLICY, prune_enabled=lambda: False)
    conv = Conversation()
    i = 0
    while ctl.measure(conv, system_prompt=SYSTEM).prompt_tokens < 0.75 * (1400 - 200):
        _turn(conv, i)
        i += 1
    # The chat's last call: its prompt is what llama.cpp holds.
    req = ctl.prepare(conv, system_prompt=SYSTEM)
    assert req.compaction is None
    for _ in backend.generate(req.messages, GenerationOptions(1), cancel=CancelToken()):
        pass
    held = backend.cached_tokens()
    got = ctl.precompute(conv, system_prompt=SYSTEM)
    assert got is not None and got.outcome.calls >= 1
    assert backend.cached_tokens() == held  # put back: the next turn reuses the chat
    # The next messages take the chat past the threshold: the summary written ahead is
    # used, with no model call inside the turn.
    while ctl.measure(conv, system_prompt=SYSTEM).prompt_tokens + 200 <= 1400 - 40:
        _turn(conv, i)
        i += 1
        ctl.precompute(conv, system_prompt=SYSTEM)
    conv.append(Message(role="user", content="Which hosts logged a code?"))
    req = ctl.prepare(conv, system_prompt=SYSTEM)
    assert req.compaction is not None
    assert "written ahead of time" in req.compaction.summarizer_note
    assert req.messages[-1]["content"] == "Which hosts logged a code?"
