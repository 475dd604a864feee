"""What the terminal chat keeps when the server is not there (issue 28, item 4): a piped or
typed message is saved in a chat before any connection is tried, the rest of the input too
when connecting fails, and resuming the chat once the server is up answers it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.sessions import SessionStore
from bench.local_server import free_port
from tests.fakes.openai_server import Messages, fake_openai_server


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    return env


def _chat(*args: str, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assistant", "chat", *args], input=text, capture_output=True,
        text=True, timeout=180, env=_env(), start_new_session=True,
    )


def _saved_user_messages() -> list[str]:
    store = SessionStore()
    (row,) = store.list_chats()
    with store.open(row.id) as chat:
        return [m.content for m in chat.conversation.messages if m.role == "user"]


def test_messages_are_kept_when_the_server_is_not_there_and_answered_on_resume() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    proc = _chat("--server", url, text="first question\n/help\nsecond question\n")
    assert proc.returncode == 1
    assert f"Cannot reach the server at {url}" in proc.stderr
    assert "[chat] 2 messages kept in chat " in proc.stderr
    assert "--resume" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _saved_user_messages() == ["first question", "second question"]

    def reply(messages: Messages) -> str:
        return f"You said: {messages[-1]['content']}"

    with fake_openai_server(reply) as server:
        proc = _chat("--server", server.url, "--resume", "last", text="")
    assert proc.returncode == 0, proc.stderr
    assert "answering the last message" in proc.stderr
    assert "You said: second question" in proc.stdout


def test_the_first_message_is_on_disk_before_any_connection_is_tried(
    _isolated_home: Path, tmp_path: Path,
) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(120)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    err = tmp_path / "stderr.txt"
    with err.open("wb") as err_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "assistant", "chat", "--server", url],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err_file,
            env=_env(), start_new_session=True,
        )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"keep me safe\n")
        proc.stdin.flush()
        try:
            conn, _ = listener.accept()  # the chat's first connection: nothing answered yet
        except TimeoutError:  # the chat never called: show why it stopped (or hung)
            pytest.fail(f"no connection in 120 s (exit {proc.poll()}); stderr:\n"
                        + err.read_text(encoding="utf-8", errors="replace"))
        saved = b"".join(p.read_bytes() for p in _isolated_home.rglob("*.jsonl"))
        conn.close()
    finally:
        proc.kill()
        proc.wait()
        if proc.stdin is not None:  # the pipe is ours to close (else: an unclosed file)
            proc.stdin.close()
        listener.close()
    assert b"keep me safe" in saved
