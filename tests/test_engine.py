"""engine.build_engine: prompts are built within the model's measured effective context."""

from __future__ import annotations

from pathlib import Path

from assistant.agent.events import MessageRefused
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
    # The whole history in every call (recall's focus would show only the newest turns
    # beside its excerpts): what grows here is what compaction keeps.
    settings.compaction.recall_focus = False
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


def test_a_long_message_may_use_the_window_beyond_the_measured_target(tmp_path: Path) -> None:
    """Issue 26 item 2 with the measured target: a 4,000-token message to a model kept
    within 2,048 is sent whole (not refused), the history beside it is compacted to its
    smallest form; one over the window's room is refused with its size and the room."""
    settings = Settings(workspace=str(tmp_path))
    backend = ScriptedBackend(window=8_192)
    _measure(backend, 2_048)
    events: list[object] = []
    engine = build_engine(backend, lambda: settings, None, events.append)
    assert engine.controller.policy().window == 2_048
    assert engine.controller.policy().limit == 8_192
    conv = Conversation()
    for turn in range(6):
        engine.agent.chat(conv, f"Note {turn}: the harbour master waited at dawn. " * 12)
    long = "\n".join(
        f"{i:04d} worker-{i % 7} served id={i * 37} in {i % 90} ms" for i in range(330)
    )
    assert 3_500 < backend.count(long) < 5_000
    engine.agent.chat(conv, long + "\nWhich worker served id=74?")
    assert not any(isinstance(e, MessageRefused) for e in events)
    sent = backend.calls[-1]
    assert sent.prompt_tokens > 2_048 and sent.prompt_tokens <= 8_192
    assert conv.messages[-2].content.endswith("Which worker served id=74?")
    huge = "\n".join(f"{i:05d} worker-{i % 7} served id={i * 37}" for i in range(900))
    assert backend.count(huge) > 8_192
    before = len(conv.messages)
    engine.agent.chat(conv, huge)
    refused = [e for e in events if isinstance(e, MessageRefused)]
    assert len(refused) == 1 and refused[0].room > 7_000 and refused[0].tokens > 8_192
    assert len(conv.messages) == before  # nothing saved


def test_the_server_engine_asks_for_cache_reuse_only_with_chunk_reuse_on() -> None:
    """The chunk reuse setting (on by default since its quality measurement met the 95%
    rule) reaches llama-server as its ``n_cache_reuse`` (tests/llm/test_llama_server.py
    measures what the server then keeps); turned off, the server moves nothing."""
    settings = Settings()
    assert server_config(settings).cache_reuse == 32  # docs/BENCHMARKS.md: 32 keeps more
    settings.performance.server_chunk_reuse_min = 48
    assert server_config(settings).cache_reuse == 48
    settings.performance.chunk_reuse_min = 100  # the embedded engine's own size
    assert server_config(settings).cache_reuse == 48
    settings.performance.chunk_reuse = False
    assert server_config(settings).cache_reuse == 0


def test_the_engine_follows_the_earlier_as_notes_setting(tmp_path: Path) -> None:
    """Switched in the settings, the next prompt writes earlier turns' calls as notes or not."""
    settings = Settings(workspace=str(tmp_path))
    (tmp_path / "plan.md").write_text("Step 1: coffee\n", encoding="utf-8")
    backend = ScriptedBackend(["```tool_call\n{\"name\": \"read_file\", \"arguments\": "
                               "{\"path\": \"plan.md\"}}\n```", "Coffee.", "Yes.", "Yes."])
    engine = build_engine(backend, lambda: settings, None, lambda _event: None)
    conv = Conversation()
    engine.agent.chat(conv, "Read plan.md.")
    engine.agent.chat(conv, "Is coffee first?")
    assert "[I ran read_file path=plan.md]" in backend.calls[-1].prompt_text
    settings.compaction.earlier_as_notes = False
    engine.agent.chat(conv, "Sure?")
    assert "[I ran read_file" not in backend.calls[-1].prompt_text


def test_the_engine_follows_the_recall_focus_setting(tmp_path: Path) -> None:
    """Off, every call shows the whole history; on (the default), a question that brings
    back an excerpt is asked beside the latest exchange and the newest turns only."""
    settings = Settings(workspace=str(tmp_path))
    assert settings.compaction.recall_focus
    settings.compaction.recall_focus = False
    backend = ScriptedBackend(["Noted."] * 9)
    engine = build_engine(backend, lambda: settings, None, lambda _event: None)
    conv = Conversation()
    engine.agent.chat(conv, "The staging server listens on port 4321. Remember it.")
    for day in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"):
        engine.agent.chat(conv, f"On {day} we talked about the weather. " * 12)
    engine.agent.chat(conv, "Lunch is at noon in Oslo.")
    engine.agent.chat(conv, "Which port does the staging server use?")
    assert "On Monday we talked" in backend.calls[-1].prompt_text
    settings.compaction.recall_focus = True
    engine.agent.chat(conv, "Which port does the staging server listen on?")
    prompt = backend.calls[-1].prompt_text
    assert "port 4321" in prompt  # the excerpt beside the question
    assert "Lunch is at noon in Oslo." in prompt  # the newest turns
    assert "On Monday we talked" not in prompt
