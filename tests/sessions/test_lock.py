"""One writer per chat: a second open, here or in another process, is refused clearly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.conversation import Message
from assistant.sessions import ChatLockedError, SessionStore

HOLDER = r"""
import sys, time
from pathlib import Path
from assistant.sessions import ChatLockedError, SessionStore
store = SessionStore(Path(sys.argv[1]))
try:
    chat = store.open(sys.argv[2])
except ChatLockedError as exc:
    print("locked:", exc, flush=True)
    sys.exit(3)
print("opened", flush=True)
if sys.argv[3] == "hold":
    time.sleep(60)
"""


def _run(store: SessionStore, chat_id: str, mode: str, tmp_path: Path) -> subprocess.Popen[str]:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen(
        [sys.executable, str(script), str(store.root), chat_id, mode],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_second_open_in_the_same_process_is_refused(store: SessionStore) -> None:
    chat = store.create()
    with pytest.raises(ChatLockedError, match="This chat is open in another window/process"):
        store.open(chat.chat_id)
    with pytest.raises(ChatLockedError):
        SessionStore(store.root).open(chat.chat_id)  # another store object, same process
    with pytest.raises(ChatLockedError):
        store.delete(chat.chat_id)
    chat.close()
    with store.open(chat.chat_id) as again:
        again.conversation.append(Message(role="user", content="mine now"))


def test_another_process_cannot_write_while_a_chat_is_open(
    store: SessionStore, tmp_path: Path
) -> None:
    chat = store.create()
    proc = _run(store, chat.chat_id, "try", tmp_path)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 3
    assert "locked: This chat is open in another window/process" in out
    chat.close()
    proc = _run(store, chat.chat_id, "try", tmp_path)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and out.strip() == "opened"


def test_a_killed_holder_releases_the_lock(store: SessionStore, tmp_path: Path) -> None:
    with store.create() as chat:
        chat_id = chat.chat_id
    proc = _run(store, chat_id, "hold", tmp_path)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "opened"
        with pytest.raises(ChatLockedError) as info:
            store.open(chat_id)
        assert info.value.chat_id == chat_id
        with pytest.raises(ChatLockedError):
            store.rename(chat_id, "renamed elsewhere")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
    with store.open(chat_id) as chat:
        assert chat.conversation.messages == []
