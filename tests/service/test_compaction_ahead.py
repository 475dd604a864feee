"""Compaction ahead of time through the service: the summary is written while the user
reads, used at the threshold, and anything the user sends stops it at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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
    # Summaries were written between turns, never inside the one that compacted.
    assert record.duration_s < 1.0


def test_sending_stops_the_summary_being_written_ahead(make_rig: Make, tmp_path: Path) -> None:
    backend = _backend()
    rig = make_rig(backend=backend, threaded=True,
                   settings=Settings(workspace=str(tmp_path / "ws")))
    rig.service.compact_ahead = False
    engine = rig.service.model.engine
    assert engine is not None
    i = 0
    threshold = 4000 - engine.controller.policy().reserve
    while engine.controller.measure(CallRequest(rig.service.chat.conversation, "x")).prompt_tokens \
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
    assert rig.service.chat.conversation.messages[-1].content == "Noted."
    assert rig.service.status_machine.status.phase is Phase.IDLE
    print(f"background summary stopped and the turn answered in {waited:.2f} s")


# -- the model's summary left to the time the user reads (issue 26) ------------------------


def _slow_model(msgs: list[dict[str, Any]]) -> str:
    """A summary takes a while (0.3 s before its first word): a user who sends at once
    stops every one being written ahead."""
    if "summar" in str(msgs[-1].get("content") or "").lower():
        time.sleep(0.3)
    return _model(msgs)


def _summary_calls(backend: ScriptedBackend) -> list[str]:
    """How each summary call ended (finish reason), in order."""
    return [c.result.finish_reason if c.result is not None else "running"
            for c in backend.calls if "summar" in str(c.messages[-1].get("content", "")).lower()]


def _until_compaction(rig: Rig, start: int, *, read: bool) -> tuple[int, CompactionFinished]:
    """Questions until one compacts; ``read``: after each reply the user reads until the
    summary written ahead is done (else they send the next one at once)."""
    assert rig.loop is not None
    i, before = start, len(_compactions(rig))
    while len(_compactions(rig)) == before:
        _ask(rig, i)
        i += 1
        if read:
            rig.loop.run_until(lambda: rig.service._ahead is None)
        assert i < start + 60, "the chat never compacted"
    return i, _compactions(rig)[-1]


def test_the_turn_never_waits_for_the_model_and_the_next_pause_writes_its_summary(
    make_rig: Make, tmp_path: Path
) -> None:
    """Writing ahead on, a user who always sends before the summary ahead is written: the
    compaction in the turn takes the code's summary, the model is not asked inside the
    turn; once they read, the model writes the next summary and the next compaction uses
    it."""
    from assistant.compaction.summary import DEFERRED_NOTE

    backend = ScriptedBackend([_slow_model] * 400, window=4000, trained_context=4000)
    rig = make_rig(backend=backend, threaded=True,
                   settings=Settings(workspace=str(tmp_path / "ws")))
    i, first = _until_compaction(rig, 0, read=False)
    record = first.record
    assert record.summarizer == "extractive" and record.summarizer_note == DEFERRED_NOTE
    # No summary by the model was finished: those begun ahead were stopped by the next
    # message.
    assert "stop" not in _summary_calls(backend)
    # From now on the user reads every reply to the end: the model writes ahead.
    _i, second = _until_compaction(rig, i, read=True)
    assert "stop" in _summary_calls(backend)
    assert second.record.summarizer == "model"
    assert "written ahead of time" in second.record.summarizer_note


@pytest.mark.parametrize("off", ["setting", "terminal"])
def test_off_or_in_the_terminal_the_model_writes_it_in_the_turn(
    make_rig: Make, tmp_path: Path, off: str
) -> None:
    """The setting off, or the terminal chat (no idle time: service.compact_ahead off):
    the compaction asks the model inside the turn, as before."""
    settings = Settings(workspace=str(tmp_path / "ws"))
    settings.compaction.compact_ahead = off != "setting"
    backend = ScriptedBackend([_slow_model] * 400, window=4000, trained_context=4000)
    rig = make_rig(backend=backend, threaded=True, settings=settings)
    if off == "terminal":
        rig.service.compact_ahead = False
    _i, first = _until_compaction(rig, 0, read=False)
    record = first.record
    assert record.summarizer == "model" and "written by the model" in record.summarizer_note
    assert record.duration_s >= 0.3  # the model's summary was written inside the turn
    assert _summary_calls(backend) == ["stop"]
