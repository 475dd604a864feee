"""The recall index is a cache checked against the chat file (issue 47, item 5), as the user
meets it: an open chat whose index file is deleted, truncated, overwritten or edited gets
recall back by the next question (rebuilt in the background); a passage edited inside the
index ("99999") never reaches a prompt, live or after reopening; an index another process
holds locked is skipped at once, not after 5 s, and is not thrown away."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.conversation import Message
from assistant.sessions.store import SessionStore
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]
QUESTION = "What is the pump code of note 3?"
FACT = "pump code 10003"


def _open_compacted(make_rig: Make, tmp_path: Path) -> tuple[Rig, Path]:
    """A chat of 30 notes, compacted (note 3 is only in the summary), with recall on."""
    store = SessionStore()
    with store.create(title="notes") as chat:
        for i in range(30):
            chat.conversation.append(Message(
                role="user", content=f"Note {i}: {FACT[:-5]}{10000 + i} ok. "
                + "filler words about nothing much " * 20))
            chat.conversation.append(Message(role="assistant", content=f"Noted {i}."))
        chat_id = chat.chat_id
    store.close_all()
    settings = Settings(workspace=str(tmp_path / "workspace"))
    settings.compaction.recall = True
    rig = make_rig(backend=ScriptedBackend(window=4096), settings=settings)
    assert rig.service.resume(chat_id)
    rig.service.submit("/compact")
    assert rig.service.chat.handle is not None
    assert rig.service.chat.handle.conversation.compactions
    return rig, rig.service.store.recall_path(chat_id)


def _ask(rig: Rig, question: str = QUESTION) -> str:
    """Ask; what the model was given beside the question (the recall block, if any)."""
    assert rig.service.submit(question)
    return str(rig.backend.calls[-1].messages[-1]["content"])


def _recalled(prompt: str) -> bool:
    return FACT in prompt.partition(QUESTION)[0]


def _truncate(path: Path) -> None:
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size // 2)


def _overwrite(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[100:] = b"\xa5" * (len(data) - 100)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [Path.unlink, _truncate, _overwrite])
def test_a_damaged_index_is_rebuilt_while_the_chat_stays_open(
    make_rig: Make, tmp_path: Path, damage: Callable[[Path], object]
) -> None:
    rig, path = _open_compacted(make_rig, tmp_path)
    assert _recalled(_ask(rig))
    damage(path)
    _ask(rig, "And the pump code of note 3 again?")  # found damaged here (maybe skipped)
    assert _recalled(_ask(rig)), "recall is not back one question after the damage"
    handle = rig.service.chat.handle
    assert handle is not None and handle.recall_rebuilds == 1
    with sqlite3.connect(path) as conn:  # the file is a whole index again
        assert conn.execute("SELECT count(*) FROM passages").fetchone()[0] > 30


def test_text_edited_inside_the_index_is_never_recalled(make_rig: Make, tmp_path: Path) -> None:
    rig, path = _open_compacted(make_rig, tmp_path)
    assert _recalled(_ask(rig))
    with sqlite3.connect(path) as conn:  # another program edits the index while it is open
        conn.execute("UPDATE passages SET text = replace(text, '10003', '99999')")
    prompts = [_ask(rig), _ask(rig, "Tell me the pump code of note 3.")]
    assert not any("99999" in p for p in prompts)
    assert _recalled(prompts[1])  # rebuilt from the chat file by the next question
    chat_id = rig.service.chat.chat_id
    assert chat_id is not None
    rig.service.shutdown()

    # Edited in the file's bytes while the chat is closed: not recalled after reopening.
    data = path.read_bytes()
    assert b"10003" in data
    path.write_bytes(data.replace(b"10003", b"99999"))
    settings = rig.service.settings
    again = make_rig(backend=ScriptedBackend(window=4096), settings=settings)
    assert again.service.resume(chat_id)
    prompts = [_ask(again), _ask(again, "Tell me the pump code of note 3.")]
    assert not any("99999" in p for p in prompts)
    assert _recalled(prompts[1])


LOCKER = (
    "import sqlite3, sys\n"
    "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "conn.execute('BEGIN EXCLUSIVE')\n"
    "print('locked', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_a_locked_index_is_skipped_at_once(make_rig: Make, tmp_path: Path) -> None:
    rig, path = _open_compacted(make_rig, tmp_path)
    assert _recalled(_ask(rig))
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout is not None and locker.stdout.readline() == "locked\n"
        started = time.monotonic()
        _ask(rig, "Which pump code did note 3 have?")
        took = time.monotonic() - started
    finally:
        locker.communicate("", timeout=30)
    assert took < 2.0, f"the turn waited {took:.1f} s for the lock"
    handle = rig.service.chat.handle
    assert handle is not None and handle.recall_rebuilds == 0  # locked is not damaged
    assert _recalled(_ask(rig))  # the lock is gone: recall as before


def test_an_index_locked_when_the_chat_is_opened_is_skipped_and_kept(
    make_rig: Make, tmp_path: Path
) -> None:
    rig, path = _open_compacted(make_rig, tmp_path)
    assert _recalled(_ask(rig))
    chat_id, settings = rig.service.chat.chat_id, rig.service.settings
    assert chat_id is not None
    rig.service.shutdown()
    inode = path.stat().st_ino
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    again = make_rig(backend=ScriptedBackend(window=4096), settings=settings)
    try:
        assert locker.stdout is not None and locker.stdout.readline() == "locked\n"
        assert again.service.resume(chat_id)
        started = time.monotonic()
        _ask(again, "Which pump code did note 3 have?")
        took = time.monotonic() - started
    finally:
        locker.communicate("", timeout=30)
    assert took < 2.0, f"the turn waited {took:.1f} s for the lock"
    assert path.stat().st_ino == inode  # kept, not thrown away and rebuilt
    assert _recalled(_ask(again))
