"""Every command-line value of the terminal chat is checked before anything runs (issue 47,
item 6): one line naming the option, exit 2, no traceback, and a piped message is left
unread on standard input (the next reader gets it) rather than lost."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--max-tokens", "8"], "--max-tokens: Input should be greater than or equal to 16"),
        (["--max-tokens", "lots"], "argument --max-tokens: invalid int value: 'lots'"),
        (["--mode", "fast"], "argument --mode: invalid choice: 'fast'"),
        (["--workspace", "FILE"], "--workspace: FILE is a file, not a folder"),
    ],
)
def test_a_bad_value_is_one_line_and_the_piped_message_stays_unread(
    tmp_path: Path, options: list[str], says: str
) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("x")
    options = [str(afile) if o == "FILE" else o for o in options]
    says = says.replace("FILE", str(afile))
    chat = shlex.join([sys.executable, "-m", "assistant", "chat", *options])
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    # The chat, then `cat` on the same standard input: what the chat left unread comes out.
    proc = subprocess.run(
        ["sh", "-c", f"{chat}; echo \"exit=$?\" >&2; cat"], input="What is 2 + 2?\n",
        capture_output=True, text=True, timeout=120, env=env,
    )
    lines = proc.stderr.splitlines()
    assert lines[-1] == "exit=2", proc.stderr
    assert len(lines) == 2, proc.stderr  # one line, no usage block, no traceback
    assert lines[0].startswith(f"assistant chat: error: {says}"), lines[0]
    assert lines[0].endswith(" (see --help; nothing was read from stdin)"), lines[0]
    assert proc.stdout == "What is 2 + 2?\n"
