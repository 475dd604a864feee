"""The one status: what the service says it is doing, step by step."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from assistant.agent.events import ContextChanged
from assistant.compaction.events import PruneEvent, prune_note
from assistant.compaction.summary.grammar import SKELETON
from assistant.service.status import Phase, Status, StatusMachine
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]


def _call(name: str, **arguments: str) -> str:
    return "```tool_call\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```"


def _phases(rig: Rig) -> list[str]:
    out: list[str] = []
    for status in rig.statuses():
        label = status.phase.value + (f":{status.detail}" if status.phase is
                                      Phase.RUNNING_TOOL else "")
        if not out or out[-1] != label:
            out.append(label)
    return out


def test_a_turn_with_a_tool_call_walks_through_the_phases(make_rig: Make) -> None:
    rig = make_rig(_call("list_dir", path="."), "There is nothing there.")
    rig.service.settings.workspace_path().mkdir(parents=True, exist_ok=True)
    rig.events.clear()
    rig.service.submit("What is in the workspace?")
    assert _phases(rig) == [
        "evaluating prompt", "generating", "running tool:list_dir", "evaluating prompt",
        "generating", "idle",
    ]
    assert rig.service.status_machine.status == Status(Phase.IDLE)
    assert rig.service.status_machine.status.text == "Ready"


def test_loading_then_ready_then_failed_is_sticky() -> None:
    m = StatusMachine()
    assert m.loading("smollm2") == Status(Phase.LOADING_MODEL, "smollm2")
    assert "Loading smollm2… 50%" in (m.loading("smollm2", 0.5) or Status(Phase.IDLE)).text
    assert m.loaded("smollm2") == Status(Phase.IDLE, "Model ready: smollm2")
    m.load_failed("file not found")
    assert m.note("Settings saved") is None  # no "ready" note without a model
    assert m.status.text == "No model loaded: file not found"


def test_a_load_during_a_job_shows_when_the_job_ends() -> None:
    m = StatusMachine()
    m.loaded("a")
    m.job_started(model_call=True)
    assert m.loading("b") is None
    assert m.status.phase is Phase.EVALUATING_PROMPT
    assert m.job_finished() == Status(Phase.LOADING_MODEL, "b")


def test_stopping_a_compaction_says_so(make_rig: Make) -> None:
    backend = ScriptedBackend(delay_per_token=0.05)
    rig = make_rig(backend=backend, threaded=True)
    service = rig.service
    for i in range(6):
        backend.enqueue(f"Answer {i}.")
        service.submit(f"Question {i}: " + "lorem ipsum dolor sit amet " * 120)
        rig.idle()
    # A summary the grammar allows, streamed slowly enough to be stopped half way.
    backend.enqueue("".join(
        ("" if i == 0 else "\n" if sec.heading.startswith("###") else "\n\n")
        + f"{sec.heading}\n- Question {i} asked about lorem ipsum"
        for i, sec in enumerate(SKELETON)
    ))
    service.compact()
    assert rig.loop is not None
    rig.loop.run_until(lambda: service.status_machine.status.phase is Phase.COMPACTING)
    assert service.status_machine.status.text == "Summarizing older messages… (Esc to cancel)"
    service.stop()
    assert service.status_machine.status.text == "Cancelling the summary…"
    rig.idle()
    assert service.status_machine.status.text == "Stopped"
    assert service.chat.conversation.compactions == []


def test_a_prune_is_the_note_left_after_the_turn(make_rig: Make) -> None:
    from assistant.config import Settings

    settings = Settings()
    settings.local.protect, settings.local.minimum = 0, 0
    rig = make_rig(settings=settings)
    workspace = rig.service.settings.workspace_path()
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "big.txt").write_text("line of text\n" * 200)
    rig.service.submit("/read big.txt")
    for _ in range(3):
        rig.backend.enqueue("ok")
        rig.service.submit("next")
    prunes = [
        e.event for e in rig.of(ContextChanged) if isinstance(e.event, PruneEvent)
    ]
    assert len(prunes) == 1
    notes = [s.text for s in rig.statuses() if s.phase is Phase.IDLE]
    assert prune_note(1, prunes[0].tokens_freed) in notes


def test_a_note_about_one_chat_is_gone_after_opening_another(
    make_rig: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = make_rig("First answer.", "Second answer.")
    service = rig.service
    service.submit("Hello from the first chat.")
    first = service.chat.chat_id
    service.new_chat()
    service.submit("Hello from the second chat.")
    assert first is not None and service.chat.chat_id != first
    service._status(service.status_machine.note("Summary for the next compaction ready"))
    assert rig.statuses()[-1].detail == "Summary for the next compaction ready"
    # The chat opened has no saved model state (nothing else says anything on opening it).
    monkeypatch.setattr(service.saved_states, "restore_job", lambda *a, **k: None)
    assert service.open_chat(first)
    assert "next compaction" not in (rig.statuses()[-1].detail or "")
