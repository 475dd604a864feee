"""Compaction ahead of time through the service: the summary is written while the user
reads, used at the threshold, and anything the user sends stops it at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assistant.agent.events import ContextChanged
from assistant.compaction.events import CompactionFinished
from assistant.compaction.request import CallRequest
from assistant.config import Settings
from assistant.service.status import Phase
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]

SUMMARY = """## Goal
- Answer questions about lorem ipsum

## Constraints & Preferences
- none

## Progress
### Done
- Answered questions about lorem ipsum
### In Progress
- Answer about lorem ipsum
### Blocked
- none

## Key Decisions
- Answer each question about lorem ipsum

## Next Steps
- Answer the next question about lorem

## Critical Context
- The questions are about lorem ipsum dolor"""


def _model(msgs: list[dict[str, Any]]) -> str:
    """Summaries when asked for one, short answers otherwise."""
    last = str(msgs[-1].get("content") or "").lower()
    return SUMMARY if "summar" in last else "Noted."


def _backend(**kw: Any) -> ScriptedBackend:
    return ScriptedBackend([_model] * 200, window=4000, trained_context=4000, **kw)


def _ask(rig: Rig, i: int) -> None:
    assert rig.service.submit(f"Question {i}: " + "lorem ipsum dolor sit amet " * 40)
    rig.idle()


def _compactions(rig: Rig) -> list[CompactionFinished]:
    return [e.event for e in rig.of(ContextChanged) if isinstance(e.event, CompactionFinished)]


def test_the_compaction_at_the_threshold_uses_the_summary_written_ahead(
    make_rig: Make, tmp_path: Path
) -> None:
    backend = _backend()
    rig = make_rig(backend=backend, settings=Settings(workspace=str(tmp_path / "ws")))
    i = 0
    while not _compactions(rig):
        _ask(rig, i)
        i += 1
        assert i < 40, "the chat never compacted"
    record = _compactions(rig)[0].record
    assert "written ahead of time" in record.summarizer_note
    engine = rig.service.engine
    assert engine is not None and engine.controller.summary_cache.hits == 1
    # Summaries were written between turns, never inside the one that compacted.
    assert record.duration_s < 1.0


def test_sending_stops_the_summary_being_written_ahead(make_rig: Make, tmp_path: Path) -> None:
    backend = _backend()
    rig = make_rig(backend=backend, threaded=True,
                   settings=Settings(workspace=str(tmp_path / "ws")))
    rig.service.compact_ahead = False
    engine = rig.service.engine
    assert engine is not None
    i = 0
    threshold = 4000 - engine.controller.policy().reserve
    while engine.controller.measure(CallRequest(rig.service.conversation, "x")).prompt_tokens \
            < 0.75 * threshold:
        _ask(rig, i)
        i += 1
    # Now a slow summary starts in the background as soon as a turn ends ...
    rig.service.compact_ahead = True
    backend.delay_per_token = 0.05
    _ask(rig, i)
    assert rig.loop is not None
    rig.loop.run_until(lambda: rig.service._ahead is not None)
    deadline = time.monotonic() + 10
    while not any("summar" in str(c.messages[-1].get("content", "")).lower()
                  for c in backend.calls[-1:]) and time.monotonic() < deadline:
        time.sleep(0.01)
    # ... and the user's next message stops it: the turn is answered, not the summary.
    backend.delay_per_token = 0.0
    sent = time.monotonic()
    assert rig.service.submit("And the last one?")
    rig.idle()
    waited = time.monotonic() - sent
    summary_calls = [c for c in backend.calls
                     if "summar" in str(c.messages[-1].get("content", "")).lower()]
    assert summary_calls and summary_calls[-1].result is not None
    assert summary_calls[-1].result.finish_reason == "cancelled"
    assert rig.service.conversation.messages[-1].content == "Noted."
    assert rig.service.status.phase is Phase.IDLE
    print(f"background summary stopped and the turn answered in {waited:.2f} s")
