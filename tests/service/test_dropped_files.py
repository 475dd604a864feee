"""Files dropped on the window, as the service runs them: read in order, queued behind a
running reply or a model that is still loading, never refused."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from assistant.config import Settings
from assistant.llm.base import LLMBackend
from assistant.service.events import QueueChanged
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]


def _files(tmp_path: Path, *names: str) -> list[Path]:
    folder = tmp_path / "elsewhere"
    folder.mkdir(exist_ok=True)
    out = []
    for name in names:
        path = folder / name
        path.write_text(f"contents of {name}\n", encoding="utf-8")
        out.append(path)
    return out


def test_files_dropped_while_a_reply_runs_are_read_after_it(
    make_rig: Make, tmp_path: Path
) -> None:
    backend = ScriptedBackend(["A long answer " * 30], delay_per_token=0.005)
    rig = make_rig(backend=backend, threaded=True)
    a, b = _files(tmp_path, "a.txt", "b.txt")
    rig.service.submit("Tell me something long")
    assert rig.service.jobs.busy
    rig.service.drop_file(a)
    rig.service.drop_file(b)
    assert rig.service.queue == ["(file) a.txt", "(file) b.txt"]
    rig.idle()
    tools = [m for m in rig.service.chat.conversation.messages if m.role == "tool"]
    assert [t.content.strip().splitlines()[-1] for t in tools] == [
        "contents of a.txt",
        "contents of b.txt",
    ]
    assert not rig.notices("warning")
    assert (tmp_path / "workspace" / "dropped" / "b.txt").is_file()


def test_a_file_dropped_before_the_model_loaded_waits_for_it(
    make_rig: Make, tmp_path: Path
) -> None:
    gate = threading.Event()
    backend = ScriptedBackend()

    def slow(_model: str, _n_ctx: int, _threads: int) -> LLMBackend:
        gate.wait(10)
        return backend

    rig = make_rig(
        factory=slow, threaded=True, load=False,
        settings=Settings(workspace=str(tmp_path / "workspace")),
    )
    rig.service.load_model()
    (path,) = _files(tmp_path, "notes.md")
    rig.service.drop_file(path)
    assert rig.of(QueueChanged)[-1].texts == ("(file) notes.md",)
    gate.set()
    rig.idle()
    last = rig.service.chat.conversation.messages[-1]
    assert last.content.strip().endswith("contents of notes.md")
