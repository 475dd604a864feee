"""A real session of another coding agent, replayed through the pipeline: every fact its
user would expect to survive is in what the model would see next (local and standard)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from assistant.compaction.tokens import CountingBackend
from assistant.llm.registry import load_registry
from assistant.replay import load_transcript, replay, resolve_policy

DATA = Path(__file__).resolve().parents[1] / "data" / "real-sessions"
SESSION = DATA / "pi_refactor_session.jsonl"
FACTS = json.loads((DATA / "pi_refactor_session.facts.json").read_text(encoding="utf-8"))


def _seen(final: dict[str, object]) -> str:
    messages = final["final_context"]
    assert isinstance(messages, list)
    return "\n".join(
        (m.get("content") or "") + json.dumps(m.get("tool_calls") or "") for m in messages
    ).lower()


# Standard mode replays the whole session in a 128k window (half a minute): `make test`.
@pytest.mark.parametrize("mode", ["local", pytest.param("standard", marks=pytest.mark.slow)])
def test_every_must_fact_survives(mode: str) -> None:
    system, messages = load_transcript(SESSION)
    policy = resolve_policy(mode, None, None)  # type: ignore[arg-type]
    backend = CountingBackend(window=policy.window)
    out = io.StringIO()
    final = replay(messages, backend=backend, policy=policy, system_prompt=system or "sys",
                   use_model=False, out=out)
    seen = _seen(final)
    lost = [fact for fact in FACTS["must"] if fact.lower() not in seen]
    assert lost == [], f"{mode}: lost {lost}"
    calls = [json.loads(line) for line in out.getvalue().splitlines()[:-1]]
    assert all(c["prompt_tokens"] + policy.reserve <= policy.window for c in calls)
    if mode == "local":
        compactions = [c["compaction"] for c in calls if c["compaction"]]
        assert len(compactions) >= 5
        # Compactions fill the window at least halfway, except where one message alone
        # (a 12k-token write_file call) leaves no older history that could stay.
        filled = [c["tokens_after"] >= policy.window // 2 for c in compactions]
        assert sum(filled) >= len(filled) - 1


def test_every_must_fact_survives_at_the_embedded_models_shipped_size() -> None:
    """The embedded model's prompts are kept within its measured effective context (2,048
    tokens for SmolLM2): there the record of what the user said is small, and the chat's
    first instructions ("code sharing between the different run modes") and its short
    decisions ("ok, create a branch refactor") must still be in it."""
    registry = load_registry()
    entry = registry.get(registry.small)
    assert entry is not None and entry.effective_context
    system, messages = load_transcript(SESSION)
    policy = resolve_policy("local", entry.effective_context, None)
    assert policy.window == entry.effective_context
    out = io.StringIO()
    final = replay(messages, backend=CountingBackend(window=policy.window), policy=policy,
                   system_prompt=system or "sys", use_model=False, out=out)
    seen = _seen(final)
    assert [fact for fact in FACTS["must"] if fact.lower() not in seen] == []
