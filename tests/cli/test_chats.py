"""``assistant chats`` and the terminal chat's resume errors: no model needed."""

from __future__ import annotations

import os
import subprocess
import sys

from assistant.sessions.store import SessionStore


def _run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        input=stdin, capture_output=True, text=True, timeout=120, env=env,
    )


def test_chats_lists_the_saved_chats_newest_first() -> None:
    proc = _run("chats")
    assert proc.returncode == 0 and proc.stdout == ""
    assert "No saved chats yet" in proc.stderr
    store = SessionStore()
    with store.create(title="Older chat"):
        pass
    with store.create(title="Newer chat") as newer:
        newer.rename("Newer chat")
    proc = _run("chats")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(newer.chat_id) and lines[0].endswith("Newer chat")
    assert lines[1].endswith("Older chat")


def test_resume_of_an_unknown_chat_fails_before_loading_a_model() -> None:
    proc = _run("chat", "--resume", "no-such-chat", stdin="hello\n")
    assert proc.returncode == 1
    assert "No chat matches “no-such-chat”." in proc.stderr
    assert "[model]" not in proc.stderr
    assert SessionStore().list_chats() == []


def test_resume_of_a_chat_open_elsewhere_is_refused() -> None:
    store = SessionStore()
    with store.create(title="Busy chat") as handle:
        proc = _run("chat", "--resume", handle.chat_id, stdin="hello\n")
    assert proc.returncode == 1
    assert "open" in proc.stderr.lower()
    assert "[model]" not in proc.stderr


def test_a_title_with_lone_surrogates_and_escapes_is_listed_as_text() -> None:
    """Issue 47: a title holding a lone surrogate (saved before the edges made text valid)
    raised UnicodeEncodeError in ``chats``; an escape sequence in it reached the terminal."""
    store = SessionStore()
    with store.create(title="odd \ud83d \x1b[2J title é"):
        pass
    proc = subprocess.run(
        [sys.executable, "-m", "assistant", "chats"], capture_output=True, timeout=120,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
    )
    assert proc.returncode == 0, proc.stderr
    assert b"odd \\ud83d \\x1b[2J title \\xe9" in proc.stdout
    assert b"\x1b" not in proc.stdout and b"Traceback" not in proc.stderr
