"""The terminal chat, run as a user would: a subprocess fed through stdin."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DISPLAY", None)  # works with no display
    return env


def test_pipe_a_question_prints_a_reply_and_exits_zero() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--max-tokens", "32"],
        input="What is the capital of France?\n",
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert "Paris" in proc.stdout
    assert "window 8,192" in proc.stderr


def test_tool_command_and_workspace_option(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    proc = subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--workspace", str(tmp_path)],
        input="/read notes.txt\n/read ../../etc/passwd\n",
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert "alpha" in proc.stdout and "beta" in proc.stdout
    assert "root:" not in proc.stdout
    assert "outside the workspace" in proc.stdout + proc.stderr


def test_ctrl_c_stops_the_reply_without_exiting() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "assistant", "chat", "--max-tokens", "400"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("Write a very long story about a dragon who loves books.\n")
    proc.stdin.flush()
    first = proc.stdout.read(20)  # the reply is streaming
    assert first
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.stdin.write("What is the capital of France?\n")
    proc.stdin.close()
    proc.stdin = None
    rest, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    out = first + rest
    assert "[stopped]" in out
    # The chat went on: the second question got its own (non-empty) reply.
    assert out.split("[stopped]", 1)[1].strip()
    assert err.count("[model]") == 1  # one process, no restart


def test_a_terminal_chat_is_saved_and_resumed_with_its_earlier_messages() -> None:
    first = subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--max-tokens", "16"],
        input="My favourite colour is teal. Say OK.\n",
        capture_output=True, text=True, timeout=180, env=_env(),
    )
    assert first.returncode == 0, first.stderr
    reply = first.stdout.strip()
    assert reply
    listed = subprocess.run(
        [sys.executable, "-m", "assistant", "chats"],
        capture_output=True, text=True, timeout=60, env=_env(),
    )
    assert listed.returncode == 0, listed.stderr
    (line,) = listed.stdout.splitlines()
    assert "2 messages" in line and "My favourite colour is teal" in line
    chat_id = line.split()[0]

    second = subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--resume", "last", "--max-tokens", "16"],
        input="What is my favourite colour?\n",
        capture_output=True, text=True, timeout=180, env=_env(),
    )
    assert second.returncode == 0, second.stderr
    # The earlier messages are shown first (what the user typed after "> "), then the
    # reply to the new question.
    history = f"> My favourite colour is teal. Say OK.\n{reply}\n"
    assert second.stdout.startswith(history)
    assert second.stdout[len(history):].strip()
    assert f"({chat_id})" in second.stderr and "2 messages" in second.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "assistant", "chats"],
        capture_output=True, text=True, timeout=60, env=_env(),
    )
    (line,) = listed.stdout.splitlines()
    assert line.startswith(chat_id) and "4 messages" in line


def test_read_then_ask_keeps_the_file_for_the_question(tmp_path: Path) -> None:
    """Issue 12 as first seen in the terminal: ``/read`` a file larger than ``protect`` after
    an earlier turn, then ask about it; nothing is cleared before the model answers. (The
    read is the latest turn with the question: it may go beyond the 2,048 tokens the
    embedded model's history is kept within, up to its 8,192 window; docs/ANSWERS.md.)"""
    lines = [f"Line {i}: the parcel for desk {i} weighs {i * 3} kilograms." for i in range(1, 106)]
    (tmp_path / "notes.txt").write_text("\n".join(lines) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--workspace", str(tmp_path),
         "--max-tokens", "24"],
        input="Hi! I will show you my notes.\n/read notes.txt\nWhat is on line 7 of notes.txt?\n",
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert "Line 105:" in proc.stdout  # the whole file was read
    assert "Cleared" not in proc.stderr, proc.stderr  # nothing cleared before the answer


def _stats(stderr: str) -> list[dict[str, str]]:
    """The ``[stats] key=value ...`` lines, one dict per reply."""
    out = []
    for line in stderr.splitlines():
        if line.startswith("[stats] "):
            out.append(dict(part.split("=", 1) for part in line[len("[stats] "):].split()))
    return out


def test_a_resumed_chat_loads_its_saved_state_and_evaluates_only_the_new_question() -> None:
    first = subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--max-tokens", "24"],
        input="Name three rivers in Europe.\n",
        capture_output=True, text=True, timeout=180, env=_env(),
    )
    assert first.returncode == 0, first.stderr
    (stats,) = _stats(first.stderr)
    assert list(stats) == ["prompt_tokens", "evaluated", "reused", "ttft_s", "tokens_per_s"]
    assert stats["reused"] == "0" and stats["evaluated"] == stats["prompt_tokens"]
    assert float(stats["ttft_s"]) > 0 and float(stats["tokens_per_s"]) > 0

    second = subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--resume", "last", "--max-tokens", "16"],
        input="Which is the longest?\n",
        capture_output=True, text=True, timeout=180, env=_env(),
    )
    assert second.returncode == 0, second.stderr
    held = int(
        second.stderr.split("[resume] loaded this chat's saved model state: ", 1)[1]
        .split(" tokens", 1)[0].replace(",", "")
    )
    (resumed,) = _stats(second.stderr)
    prompt, evaluated = int(resumed["prompt_tokens"]), int(resumed["evaluated"])
    assert int(resumed["reused"]) == held > int(stats["prompt_tokens"])
    # Only the new question (and the template's turn markers) was evaluated.
    assert evaluated == prompt - held < 30
