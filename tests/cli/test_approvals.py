"""Approvals in the terminal chat (issue 28, item 2), run as a user would: the real
``python -m assistant chat`` in a real pseudo-terminal, on a scripted OpenAI-compatible
server whose model asks to write a file.

In the terminal the question is asked and answered (y writes the file, n does not); with no
terminal at all the write is denied, saying how to allow it; ``--yes`` is scoped.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.cli.approvals import parse_yes, question, shown
from assistant.conversation import ToolCall
from assistant.tools.approval import ApprovalRequest
from tests.fakes.openai_server import FakeOpenAIServer, Messages, fake_openai_server, tool_call_text

ASK = "please write "
CONTENT = "written by the model\n"
#: Makes the slave side of a pty the controlling terminal of a new session, then runs argv.
LAUNCH = (
    "import os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDWR)\n"
    "for n in (0, 1, 2):\n"
    "    os.dup2(fd, n)\n"
    "os.close(fd)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


def _writes(messages: Messages) -> str:
    """The scripted model: a write of the named file when asked, else "Done.". The ask is
    the user message's last line (recall may put excerpts of the chat before it)."""
    last = messages[-1]
    content = last.get("content") or ""
    if last.get("role") == "user" and isinstance(content, str):
        line = content.strip().splitlines()[-1] if content.strip() else ""
        if line.startswith(ASK):
            return tool_call_text("write_file", {"path": line[len(ASK):].strip(),
                                                 "content": CONTENT})
    return "Done."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with fake_openai_server(_writes) as fake:
        yield fake


def _chat_args(server: FakeOpenAIServer, workspace: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "assistant", "chat", "--server", server.url,
            "--server-window", "4096", "--workspace", str(workspace), *extra]


class Terminal:
    """The master side of a pty the chat runs in."""

    def __init__(self, argv: list[str]) -> None:
        self.master, slave = os.openpty()
        name = os.ttyname(slave)
        env = dict(os.environ)
        env.pop("DISPLAY", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, name, sys.executable, *argv[1:]],
            start_new_session=True, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(slave)
        self.seen = ""

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait_for(self, text: str, after: int = 0, timeout: float = 120.0) -> int:
        """Read until ``text`` appears past position ``after``; its end position."""
        deadline = time.monotonic() + timeout
        while (at := self.seen.find(text, after)) < 0:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never appeared; the terminal shows:\n{self.seen}"
            ready, _, _ = select.select([self.master], [], [], min(left, 1.0))
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the chat exited and closed the terminal
                    chunk = b""
                if not chunk:
                    if self.proc.poll() is not None:
                        raise AssertionError(f"{text!r} never appeared:\n{self.seen}")
                    time.sleep(0.05)  # a pty may read empty for a moment
                self.seen += chunk.decode("utf-8", errors="replace")
        return at + len(text)

    def close(self) -> int:
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(AssertionError):
                self.wait_for("\0never", timeout=1)
            raise AssertionError(f"the chat did not exit; it shows:\n{self.seen}") from None
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.master)
        return code


def test_the_chat_asks_in_its_terminal_and_does_what_the_answer_says(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    term = Terminal(_chat_args(server, tmp_path))
    try:
        term.type(f"{ASK}no.txt\n")
        at = term.wait_for("Allow? [y]es once / [a]lways in this chat / [N]o:")
        assert "no.txt" in term.seen
        term.type("n\n")
        at = term.wait_for("Done.", at)
        assert not (tmp_path / "no.txt").exists()
        assert "[denied]" in term.seen

        term.type(f"{ASK}yes.txt\n")
        at = term.wait_for("Allow?", at)
        term.type("y\n")
        term.wait_for("Done.", at)
        term.type("\x04")  # Ctrl-D: end of input
    finally:
        code = term.close()
    assert code == 0, term.seen
    assert (tmp_path / "yes.txt").read_text() == CONTENT
    assert not (tmp_path / "no.txt").exists()
    assert "no terminal" not in term.seen


def _piped(argv: list[str], text: str) -> subprocess.CompletedProcess[str]:
    """The chat with piped input and no controlling terminal at all (a new session)."""
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    return subprocess.run(argv, input=text, capture_output=True, text=True, timeout=180,
                          env=env, start_new_session=True)


def test_without_a_terminal_writes_are_denied_saying_how_to_allow_them(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    proc = _piped(_chat_args(server, tmp_path), f"{ASK}a.txt\n")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "a.txt").exists()
    assert "[denied: no terminal to ask]" in proc.stderr
    assert "--yes=write or --yes=write_file" in proc.stderr


def test_yes_is_scoped(server: FakeOpenAIServer, tmp_path: Path) -> None:
    proc = _piped(_chat_args(server, tmp_path, "--yes=run"), f"{ASK}run.txt\n")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "run.txt").exists()  # run does not cover writes
    assert "[denied: no terminal to ask]" in proc.stderr

    proc = _piped(_chat_args(server, tmp_path, "--yes=write"), f"{ASK}write.txt\n")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "write.txt").read_text() == CONTENT

    proc = _piped(_chat_args(server, tmp_path, "--yes"), f"{ASK}all.txt\n")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "all.txt").read_text() == CONTENT


def test_an_unknown_scope_is_refused_before_anything_runs(tmp_path: Path) -> None:
    proc = _piped([sys.executable, "-m", "assistant", "chat", "--yes=everything"], "")
    assert proc.returncode == 2
    assert "--yes: unknown scope 'everything'" in proc.stderr


def test_scopes_name_the_tools_they_approve() -> None:
    names = ["write_file", "edit_file", "run_command", "read_file"]
    assert parse_yes(["all"], names) == (True, frozenset())
    assert parse_yes(["write"], names) == (False, frozenset({"write_file", "edit_file"}))
    assert parse_yes(["run,edit_file"], names) == (False, frozenset({"run_command",
                                                                     "edit_file"}))
    with pytest.raises(ValueError, match="unknown scope 'bogus'"):
        parse_yes(["bogus"], names)


def test_the_question_never_passes_escape_sequences_and_cuts_a_long_preview() -> None:
    request = ApprovalRequest(
        call=ToolCall(name="write_file", arguments={}),
        summary="Write \x1b[2Jx.txt",
        preview="\n".join(f"line {n}\x1b]0;title\x07" for n in range(500)),
        workspace=Path("."),
    )
    text = question(request)
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b[2J" in text
    assert "more lines not shown" in text
    assert text.count("\n") < 50
    assert shown("tab\tand\nnewline") == "tab\tand\nnewline"
