"""run_command: output, exit codes, the output cap, timeout and cancellation (group kill)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from assistant.conversation import ToolCall
from assistant.llm.base import CancelToken
from assistant.tools.base import ToolContext, ToolLimits
from assistant.tools.registry import ToolRegistry

from .conftest import Runner

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX shell commands")


def test_runs_in_the_workspace(run: Runner, root: Path) -> None:
    (root / "marker.txt").write_text("", encoding="utf-8")
    result = run("run_command", command="pwd && ls")
    assert not result.is_error
    assert str(root.resolve()) in result.text
    assert "marker.txt" in result.text
    assert result.text.startswith("$ pwd && ls\n")
    assert result.text.endswith("[exit code 0]")


def test_nonzero_exit_is_an_error_with_output(run: Runner) -> None:
    result = run("run_command", command="echo oops >&2; exit 3")
    assert result.is_error
    assert "oops" in result.text and "[exit code 3]" in result.text


def test_no_output(run: Runner) -> None:
    assert "(no output)" in run("run_command", command="true").text


def test_empty_command(run: Runner) -> None:
    assert run("run_command", command="   ").is_error


def test_output_is_capped_with_head_tail_and_marker(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    small = ToolContext(ctx.workspace, ToolLimits(max_output_chars=1_000), ctx.cancel)
    call = ToolCall(
        name="run_command",
        arguments={
            "command": f"{sys.executable} -c \"print('\\n'.join(str(i) for i in range(100000)))\""
        },
    )
    result = registry.run(call, small)
    assert not result.is_error
    assert len(result.text) < 1_600
    assert "bytes of output omitted" in result.text and "read_file" in result.text
    assert "\n0\n" in result.text  # head kept
    assert "99999" in result.text  # tail kept


def test_timeout_kills_the_whole_group(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    # A child that would write a file after the timeout must be killed with its shell.
    cmd = "(sleep 3; echo late > late.txt) & sleep 30"
    start = time.monotonic()
    result = registry.run(
        ToolCall(name="run_command", arguments={"command": cmd, "timeout_s": 0.5}), ctx
    )
    assert time.monotonic() - start < 5
    assert result.is_error and "timed out after 0.5 s" in result.text
    time.sleep(3.5)
    assert not (root / "late.txt").exists()


def test_cancel_kills_the_command(registry: ToolRegistry, ws: object, root: Path) -> None:
    cancel = CancelToken()
    ctx = ToolContext(workspace=ws, limits=ToolLimits(), cancel=cancel)  # type: ignore[arg-type]
    timer = threading.Timer(0.3, cancel.cancel)
    timer.start()
    start = time.monotonic()
    try:
        result = registry.run(
            ToolCall(name="run_command", arguments={"command": "echo started; sleep 30"}), ctx
        )
    finally:
        timer.join()
    assert time.monotonic() - start < 5
    assert result.is_error
    assert "cancelled" in result.text and "started" in result.text


def test_timeout_is_capped_by_the_limit(registry: ToolRegistry, ctx: ToolContext) -> None:
    capped = ToolContext(ctx.workspace, ToolLimits(max_command_timeout_s=0.3), ctx.cancel)
    result = registry.run(
        ToolCall(name="run_command", arguments={"command": "sleep 10", "timeout_s": 999}), capped
    )
    assert "timed out after 0.3 s" in result.text


def test_invalid_utf8_output_is_replaced(run: Runner) -> None:
    result = run("run_command", command="printf 'a\\377b'")
    assert "a\ufffdb" in result.text
