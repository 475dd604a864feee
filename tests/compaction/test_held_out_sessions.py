"""Held-out real sessions of other agents (Claude Code, Gemini CLI, pi; tests/data/real-sessions/
README.md), replayed in local mode: every must-fact their user would expect to survive is in
what the model would see next (issue 46)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from assistant.compaction.controller import ContextController
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.clean import Known, invented, parse_sections
from assistant.compaction.summary.serialize import serialize
from assistant.compaction.summary.summarizer import (
    ModelSummarizer,
    SummaryOutcome,
    SummaryRequest,
)
from assistant.compaction.tokens import CountingBackend, TokenCounter
from assistant.config import Settings
from assistant.conversation import Conversation
from assistant.llm.base import CancelToken
from assistant.llm.registry import load_registry
from assistant.replay import load_transcript, replay, resolve_policy

DATA = Path(__file__).resolve().parents[1] / "data" / "real-sessions"
SESSIONS = sorted(p for p in DATA.glob("*.jsonl") if p.with_suffix(".facts.json").exists())


def must_facts(session: Path) -> list[str]:
    facts = json.loads(session.with_suffix(".facts.json").read_text(encoding="utf-8"))
    must: list[str] = facts["must"]
    return must


def seen_text(final: dict[str, object]) -> str:
    """What the next model call would see, lower-cased (tool calls included)."""
    messages = final["final_context"]
    assert isinstance(messages, list)
    return "\n".join(
        (m.get("content") or "") + json.dumps(m.get("tool_calls") or "") for m in messages
    ).lower()


def test_the_held_out_sessions_come_from_three_agents() -> None:
    names = {p.stem for p in SESSIONS}
    assert {"pi_refactor_session", "bookminder_claude_day003", "bookminder_claude_day010",
            "bookminder_gemini_day014"} <= names


@pytest.mark.parametrize("session", SESSIONS, ids=[p.stem for p in SESSIONS])
def test_every_must_fact_survives_in_local_mode_with_the_extractive_summarizer(
    session: Path,
) -> None:
    system, messages = load_transcript(session)
    policy = resolve_policy("local", None, None)
    final = replay(messages, backend=CountingBackend(window=policy.window), policy=policy,
                   system_prompt=system or "sys", use_model=False, out=io.StringIO())
    assert sum(final["summaries"].values()) >= 1  # the session was compacted
    seen = seen_text(final)
    assert [fact for fact in must_facts(session) if fact.lower() not in seen] == []


@pytest.mark.parametrize("session", SESSIONS, ids=[p.stem for p in SESSIONS])
def test_every_must_fact_survives_at_the_embedded_models_effective_context(
    session: Path,
) -> None:
    """At the small model's measured effective context (2,048 tokens for SmolLM2) the
    record is about 500 tokens: the facts and decisions of newer messages stay while older
    messages give up words (day 10 lost "I had to use sudo to access katka's user
    directory" and the postponed corrupted-db scenario, day 3 the user's name and e-mail,
    before the record went message by message)."""
    registry = load_registry()
    entry = registry.get(registry.small)
    assert entry is not None and entry.effective_context == 2_048
    system, messages = load_transcript(session)
    policy = resolve_policy("local", entry.effective_context, None)
    assert policy.window == entry.effective_context
    final = replay(messages, backend=CountingBackend(window=policy.window), policy=policy,
                   system_prompt=system or "sys", use_model=False, out=io.StringIO())
    assert sum(final["summaries"].values()) >= 3  # compacted again and again
    seen = seen_text(final)
    assert [fact for fact in must_facts(session) if fact.lower() not in seen] == []


class _Spy:
    """The model summarizer, keeping what it was asked and what it answered."""

    def __init__(self, inner: ModelSummarizer) -> None:
        self.inner = inner
        self.calls: list[tuple[SummaryRequest, SummaryOutcome]] = []

    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        outcome = self.inner.summarize(request, cancel)
        self.calls.append((request, outcome))
        return outcome


def invented_in(request: SummaryRequest, text: str) -> list[str]:
    """Names, paths and numbers of the model's ``text`` that occur nowhere in what it
    summarized: the span's messages, the previous summary, the record of the user's words
    and the file lists."""
    state = request.state
    known = Known("\n".join([
        serialize([*request.history, *request.turn_prefix], tool_chars=1 << 30),
        request.previous or "", *state.user_messages, *state.files.read, *state.files.modified,
    ]))
    return [w for lines in parse_sections(text).values() for line in lines
            for w in invented(line, known)]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.long  # 5-20 minutes a session on 2 cores: `make long-tests`
@pytest.mark.timeout(3_600)
@pytest.mark.parametrize("session", SESSIONS, ids=[p.stem for p in SESSIONS])
def test_with_the_model_summarizer_every_must_fact_survives_and_nothing_is_invented(
    session: Path, real_backend: Any,
) -> None:
    """The embedded model writes the summaries (validated, the extractive one when both of
    its replies are rejected): the must-facts are kept all the same, and no summary the
    model wrote and the chat accepted names a thing the summarized messages never name."""
    system, messages = load_transcript(session)
    policy = resolve_policy("local", None, real_backend.info.trained_context)
    counter = TokenCounter(real_backend)
    spy = _Spy(ModelSummarizer(real_backend, counter))
    switches = Settings().switches()
    ctl = ContextController(real_backend, lambda: policy, switches=lambda: switches,
                            summarizer=spy, counter=counter)
    conv = Conversation()
    for msg in messages:
        if msg.role == "assistant":
            req = ctl.prepare(CallRequest(conv, system or "sys"))
            if req.prompt_tokens >= policy.window:
                ctl.handle_overflow(CallRequest(conv, system or "sys"))
        conv.append(msg.model_copy(deep=True))
    final = ctl.prepare(CallRequest(conv, system or "sys"))
    assert spy.calls, "the model summarizer was never asked"
    seen = seen_text({"final_context": final.messages})
    assert [fact for fact in must_facts(session) if fact.lower() not in seen] == []
    accepted = [(r, o) for r, o in spy.calls if o.kind == "model"]
    assert [(o.text, invented_in(r, o.text)) for r, o in accepted
            if invented_in(r, o.text)] == []
