"""Approvals read only what is typed after the question (issue 47, item 2), in a real
pseudo-terminal: lines typed ahead ("yes\\nyes") while the model works are discarded before
the question is asked, which says so once; end of input and Ctrl-C deny. A scripted
model asks to write a file and to run a command; neither happens unless answered after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_approvals import Terminal, _chat_args
from tests.fakes.openai_server import FakeOpenAIServer, Messages, fake_openai_server, tool_call_text


def _model(messages: Messages) -> str:
    """Writes ``NAME`` for "write NAME", runs ``touch NAME`` for "run NAME"; else "Done."."""
    last = messages[-1]
    words = str(last.get("content") or "").strip().splitlines()[-1:] or [""]
    verb, _, name = words[0].partition(" ")
    if last.get("role") == "user" and verb == "write":
        return tool_call_text("write_file", {"path": name, "content": "typed ahead\n"})
    if last.get("role") == "user" and verb == "run":
        return tool_call_text("run_command", {"command": f"touch {name}"})
    return "Done."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with fake_openai_server(_model) as fake:
        yield fake


def test_typed_ahead_yes_approves_nothing(server: FakeOpenAIServer, tmp_path: Path) -> None:
    term = Terminal(_chat_args(server, tmp_path))
    try:
        # Typed at once: the question comes after both "yes" lines are waiting.
        term.type("write a.txt\nyes\nyes\n")
        at = term.wait_for("Allow? [y]es once / [a]lways in this chat / [N]o:")
        term.type("\x04")  # Ctrl-D at the question: end of input denies
        at = term.wait_for("Done.", at)

        term.type("run ran.txt\nyes\nyes\ny\n")
        at = term.wait_for("Allow?", at)
        term.type("\x03")  # Ctrl-C at the question denies
        at = term.wait_for("[denied", at)

        # An answer typed after the question still counts.
        term.type("write b.txt\n")
        at = term.wait_for("Allow?", at)
        term.type("y\n")
        term.wait_for("Done.", at)
        term.type("\x04")
    finally:
        code = term.close()
    assert code == 0, term.seen
    assert not (tmp_path / "a.txt").exists(), term.seen
    assert not (tmp_path / "ran.txt").exists(), term.seen
    assert (tmp_path / "b.txt").read_text() == "typed ahead\n"
    assert term.seen.count("What was typed before this question was discarded") == 1
    assert term.seen.count("[denied") == 2
