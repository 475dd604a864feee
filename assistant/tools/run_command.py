"""run_command: a shell command in the workspace folder, in its own process group (so a
timeout or Stop kills all it started), with an output cap. Not a sandbox: needs approval."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from typing import IO, ClassVar

from pydantic import Field

from assistant.tools.base import Tool, ToolArgs, ToolContext, ToolResult

POLL_S = 0.05
#: Time a process group gets between SIGTERM and SIGKILL.
GRACE_S = 1.0
#: Windows: start the command in its own process group (0, meaning nothing, elsewhere).
_NEW_GROUP: int = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)


class RunCommandArgs(ToolArgs):
    aliases: ClassVar[dict[str, str]] = {
        "cmd": "command", "shell": "command", "timeout": "timeout_s", "timeout_seconds": "timeout_s"
    }

    command: str = Field(description="Shell command to run in the workspace folder.")
    timeout_s: float | None = Field(None, gt=0, description="Seconds before it is stopped.")


class RunCommandTool(Tool[RunCommandArgs]):
    name = "run_command"
    description = "Run a shell command in the workspace folder and return its output."
    args_model = RunCommandArgs
    needs_approval = True

    def run(self, args: RunCommandArgs, ctx: ToolContext) -> ToolResult:
        command = args.command.strip()
        if not command:
            return ToolResult.error("The command is empty.")
        if "\x00" in command:
            return ToolResult.error("The command contains a NUL byte.")
        limit = ctx.limits
        timeout = min(args.timeout_s or limit.command_timeout_s, limit.max_command_timeout_s)
        proc = subprocess.Popen(
            command, shell=True, cwd=ctx.workspace.root, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=os.name != "nt",
            creationflags=_NEW_GROUP,
        )
        assert proc.stdout is not None
        collector = _Collector(proc.stdout, limit.max_output_chars)
        collector.start()
        deadline = time.monotonic() + timeout
        outcome = "exit"
        while proc.poll() is None:
            if ctx.cancelled:
                outcome = "cancelled"
                break
            if time.monotonic() >= deadline:
                outcome = "timeout"
                break
            time.sleep(POLL_S)
        if outcome != "exit":
            kill_group(proc)
        collector.join(timeout=2.0)
        code = proc.returncode
        output = collector.text()
        header = f"$ {command}\n"
        if outcome == "cancelled":
            return ToolResult.error(f"{header}{output}\n[cancelled by the user; process killed]")
        if outcome == "timeout":
            return ToolResult.error(
                f"{header}{output}\n[timed out after {timeout:g} s; process killed. Pass a "
                "larger timeout_s or run something quicker.]"
            )
        return ToolResult(f"{header}{output}\n[exit code {code}]", is_error=code != 0)

    def describe(self, args: RunCommandArgs, ctx: ToolContext) -> str:
        return f"Run `{args.command}` in {ctx.workspace.root}"


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop ``proc`` and its children: SIGTERM to the group, SIGKILL after a grace period."""
    if os.name == "nt":
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(proc.pid)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        proc.wait()
        return
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            if sig == signal.SIGTERM:
                # The leader is gone; make sure no child of the group lingers.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue


class _Collector(threading.Thread):
    """Reads a pipe to the end, keeping the first ``cap`` characters and the last few."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        super().__init__(daemon=True, name="run_command-output")
        self._stream = stream
        self._head_cap = max(200, cap * 3 // 4)
        self._tail_cap = max(100, cap - self._head_cap)
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0

    def run(self) -> None:
        try:
            while chunk := os.read(self._stream.fileno(), 65536):
                self._total += len(chunk)
                room = self._head_cap - len(self._head)
                if room > 0:
                    self._head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self._tail += chunk
                    del self._tail[: max(0, len(self._tail) - self._tail_cap)]
        except (OSError, ValueError):
            pass
        finally:
            self._stream.close()

    def text(self) -> str:
        head = self._head.decode("utf-8", errors="replace")
        if not self._tail:
            return head.rstrip("\n") if head else "(no output)"
        omitted = self._total - len(self._head) - len(self._tail)
        tail = self._tail.decode("utf-8", errors="replace")
        if omitted <= 0:
            return (head + tail).rstrip("\n")
        return (
            f"{head}\n[... {omitted:,} bytes of output omitted. To see all of it, redirect the "
            "output to a file (command > out.txt) and read it with read_file "
            f"start_line/end_line ...]\n{tail}".rstrip("\n")
        )
