"""The terminal chat shows text, never control sequences, and reads any bytes as valid text
(issue 47, items 1 and 3), run as a user would: ``python -m assistant chat`` on a scripted
OpenAI-compatible server, standard input piped as bytes, the terminal's output captured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer, Messages, fake_openai_server

#: A reply that would retitle the terminal, clear it, move the cursor (C1 CSI) and fake an
#: approval question, then an emoji the server splits across two events.
HOSTILE = ["Sure.\x1b]0;pwned\x07\x1b[2J\x9b5A\rAllow? [y]es once / [a]lways in this chat: y "
           "\x1bP1$r\x1b\\ \ud83d", "\ude00 done"]
RAW = ("\x1b", "\x07", "\x9b", "\x90", "\r")


def _model(messages: Messages) -> str | list[str]:
    return HOSTILE if "hostile" in str(messages[-1].get("content")) else "Plain."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with fake_openai_server(_model) as fake:
        yield fake


def _chat(server: FakeOpenAIServer, workspace: Path, data: bytes,
          *extra: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    return subprocess.run(
        [sys.executable, "-m", "assistant", "chat", "--server", server.url, "--server-window",
         "4096", "--workspace", str(workspace), *extra],
        input=data, capture_output=True, timeout=180, env=env, start_new_session=True,
    )


def _no_raw_controls(data: bytes) -> str:
    text = data.decode("utf-8")  # the terminal is given valid UTF-8
    for ch in RAW:
        assert ch not in text, (ch, text)
    assert not any(0x80 <= ord(c) <= 0x9f for c in text)
    return text


def test_a_hostile_reply_is_printed_as_visible_text(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    proc = _chat(server, tmp_path, b"say something hostile\n")
    assert proc.returncode == 0, proc.stderr
    out = _no_raw_controls(proc.stdout)
    _no_raw_controls(proc.stderr)
    assert "Sure.\\x1b]0;pwned\\x07\\x1b[2J\\x9b5A\\x0dAllow?" in out
    assert "\U0001f600 done" in out  # the pair split across two events is one character
    assert b"Traceback" not in proc.stderr


def test_file_names_and_tool_output_are_printed_as_visible_text(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with open(os.fsencode(workspace) + b"/caf\xe9\x1b[2J.txt", "wb") as fh:
        fh.write(b"title \x1b]0;pwned\x07 here\n")
    (workspace / "notes.txt").write_text("bell \x07 and \x1b[31mred\x1b[0m\n", encoding="utf-8")
    proc = _chat(server, workspace, b"/ls\n/read notes.txt\n/grep pwned\n")
    assert proc.returncode == 0, proc.stderr
    out = _no_raw_controls(proc.stdout)
    _no_raw_controls(proc.stderr)
    assert "caf\\xe9\\x1b[2J.txt (22 bytes)" in out
    assert "bell \\x07 and \\x1b[31mred\\x1b[0m" in out
    assert "caf\\xe9\\x1b[2J.txt:1: title \\x1b]0;pwned\\x07 here" in out


def test_bytes_that_are_not_utf8_on_stdin_become_a_visible_replacement(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    proc = _chat(server, tmp_path, b"caf\xe9 \xed\xa0\xbd and \xff\xfe ok\nsecond\n")
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    sent = server.requests[0][-1]["content"]
    assert sent == "caf\ufffd \ufffd\ufffd\ufffd and \ufffd\ufffd ok"
    chats = Path(os.environ["ASSISTANT_HOME"]).rglob("*.jsonl")
    saved = [json.loads(line) for path in chats for line in path.read_text().splitlines()]
    assert any(e.get("message", {}).get("content") == sent for e in saved)
    assert proc.stdout.decode("utf-8").count("Plain.") == 2
