"""engine.build_engine: prompts are built within the model's measured effective context."""

from __future__ import annotations

from pathlib import Path

from assistant.config import Settings
from assistant.conversation import Conversation
from assistant.engine import build_engine, server_config
from assistant.llm.context_probe import EffectiveContext, EffectiveContextStore, store_key
from tests.fakes.scripted import ScriptedBackend


def _measure(backend: ScriptedBackend, effective: int) -> None:
    """A stored probe result as ``python -m assistant probe`` keeps it."""
    EffectiveContextStore().put(
        store_key(backend.info),
        EffectiveContext(
            model="scripted",
            window=backend.info.context_window,
            effective=effective,
            accuracy={1024: [6, 6], effective: [5, 6], 8192: [1, 6]},
            measured="2026-11-26T07:00:00+00:00",
        ),
    )


def _largest_prompts(settings: Settings, backend: ScriptedBackend, turns: int = 14) -> int:
    engine = build_engine(backend, lambda: settings, None, lambda _event: None)
    conv = Conversation()
    filler = "The harbour master waited beside the stone bridge at dawn. " * 30  # ~350 tokens
    for turn in range(turns):
        engine.agent.chat(conv, f"Note {turn}: {filler}")
    return max(call.prompt_tokens for call in backend.calls)


def test_a_smaller_measured_context_makes_compaction_come_earlier(tmp_path: Path) -> None:
    settings = Settings(workspace=str(tmp_path))
    plain = ScriptedBackend()
    largest_plain = _largest_prompts(settings, plain)
    assert largest_plain > 4_000  # the 8,192-token window lets the chat grow past 4,000

    measured = ScriptedBackend()
    _measure(measured, 3_000)
    assert settings.effective_policy(8_192, 3_000).window == 3_000
    largest = _largest_prompts(settings, measured)
    assert largest <= 3_000  # compacted to stay within what the model uses well


def test_the_measured_context_has_a_floor_and_a_switch(tmp_path: Path) -> None:
    settings = Settings(workspace=str(tmp_path))
    assert settings.effective_policy(8_192, 500).window == 2_048  # a weak probe: floor
    assert settings.effective_policy(1_024, 500).window == 1_024  # the window if smaller
    assert settings.effective_policy(8_192, 9_000).window == 8_192  # never above the window
    settings.compaction.use_measured_context = False
    assert settings.effective_policy(8_192, 3_000).window == 8_192
    backend = ScriptedBackend()
    _measure(backend, 3_000)
    assert _largest_prompts(settings, backend) > 4_000  # switched off: not applied


def test_the_server_engine_asks_for_cache_reuse_only_with_chunk_reuse_on() -> None:
    """The chunk reuse setting (off by default: approximate) reaches llama-server as its
    ``n_cache_reuse`` (tests/llm/test_llama_server.py measures what the server then keeps)."""
    settings = Settings()
    assert server_config(settings).cache_reuse == 0
    settings.performance.chunk_reuse = True
    settings.performance.chunk_reuse_min = 48
    assert server_config(settings).cache_reuse == 48
