"""Held-out real sessions of other agents (Claude Code, Gemini CLI, pi; tests/data/real-sessions/
README.md), replayed in local mode: every must-fact their user would expect to survive is in
what the model would see next (issue 46)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from assistant.compaction.tokens import CountingBackend
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
