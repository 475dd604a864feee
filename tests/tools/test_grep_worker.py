"""grep's worker process (assistant/tools/scan_pool.py): the same output as a scan in the
app's process, the time budget kept, and no process left after Stop or after the app exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from assistant.conversation import ToolCall
from assistant.llm.base import CancelToken
from assistant.tools import scan_pool
from assistant.tools.base import ToolContext, ToolResult
from assistant.tools.registry import ToolRegistry
from assistant.tools.scan_worker import scan
from assistant.tools.search import CHUNK_BYTES, LineSearcher
from assistant.tools.walk import WalkBudget

from .conftest import Runner

pytestmark = pytest.mark.skipif(os.name == "nt", reason="no worker process on Windows")


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (an exited one not yet reaped by init is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _wait_for(check: Any, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


@pytest.fixture
def tree(root: Path) -> Path:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x = 'aa'\n" * 60 + "b = 1\r\n", encoding="utf-8")
    (root / "src" / "b.py").write_text("AaA\n" + "a" * 700 + "\nlast a", encoding="utf-8")
    (root / "big.txt").write_bytes((b"a" * 40 + b"\n") * (CHUNK_BYTES // 41 + 7) + b"a!\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "bin.dat").write_bytes(b"a\x00a\n")
    (root / "latin.txt").write_bytes(b"caf\xe9 a\n")
    (root / "notes.md").write_text("\n\nA line\n\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": "a"},
        {"pattern": "(a+)+$"},
        {"pattern": "^$"},
        {"pattern": "aaa", "ignore_case": True},
        {"pattern": "b", "glob": "*.py"},
        {"pattern": "a", "path": "src/b.py"},
        {"pattern": "zzz"},
    ],
)
def test_the_worker_gives_the_same_output_as_a_scan_in_the_app(
    run: Runner, tree: Path, monkeypatch: pytest.MonkeyPatch, arguments: dict[str, Any]
) -> None:
    in_worker = run("grep", **arguments)
    assert scan_pool.worker_pids(), "the scan did not run in a worker"
    monkeypatch.setattr(scan_pool, "_take", lambda: None)
    here = run("grep", **arguments)
    assert (in_worker.text, in_worker.is_error) == (here.text, here.is_error)


def test_the_time_budget_is_kept_in_the_worker() -> None:
    searcher = LineSearcher("a")
    assert scan(searcher, b"a\na\n", 1, time.monotonic(), 60.0) == ([(1, b"a")], 1, False)
    assert scan(searcher, b"a\n", 5, time.monotonic() - 10, 1.0) == ([], 0, True)
    budget = WalkBudget(seconds=1.0, started=time.monotonic() - 10)
    lines = scan_pool.LineScan(searcher, "a", False)
    try:
        assert lines.lines(b"a\n", 5, budget) == ([], 0)
    finally:
        lines.close()
    assert budget.stopped_by == "it ran for 1 seconds"


def test_stop_kills_the_worker_and_leaves_no_process(
    ctx: ToolContext, registry: ToolRegistry, root: Path
) -> None:
    scan_pool.shutdown()
    for i in range(8):
        (root / f"log{i}.txt").write_bytes((b"a" * 40 + b"\n") * (2 * CHUNK_BYTES // 41))
    token = CancelToken()
    stopping = ToolContext(ctx.workspace, ctx.limits, token)
    results: list[ToolResult] = []
    call = ToolCall(name="grep", arguments={"pattern": "(a+)+$"})
    worker = threading.Thread(target=lambda: results.append(registry.run(call, stopping)))
    worker.start()
    _wait_for(scan_pool.worker_pids)
    pids = scan_pool.worker_pids()
    time.sleep(0.3)
    assert worker.is_alive(), "the grep ended before Stop"
    pressed = time.monotonic()
    token.cancel()
    worker.join(timeout=5)
    assert time.monotonic() - pressed < 0.5
    assert results[0].is_error and results[0].text == "cancelled by the user"
    assert not any(_running(pid) for pid in pids)
    assert scan_pool.worker_pids() == set()


_APP = """
    import sys
    from pathlib import Path
    from assistant.conversation import ToolCall
    from assistant.llm.base import CancelToken
    from assistant.tools import scan_pool
    from assistant.tools.base import ToolContext, ToolLimits
    from assistant.tools.registry import ToolRegistry
    from assistant.tools.workspace import Workspace

    ctx = ToolContext(Workspace(Path(sys.argv[1])), ToolLimits(), CancelToken())
    ToolRegistry.default().run(ToolCall(name="grep", arguments={"pattern": "a"}), ctx)
    print(*scan_pool.worker_pids(), flush=True)
    if sys.argv[2] == "killed":
        sys.stdin.read()
"""


@pytest.mark.parametrize("how", ["exits", "killed"])
def test_no_worker_is_left_when_the_app_exits_or_is_killed(root: Path, how: str) -> None:
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_APP), str(root), how],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as app:
        assert app.stdout is not None
        pids = [int(p) for p in app.stdout.readline().split()]
        assert pids
        if how == "killed":
            app.send_signal(signal.SIGKILL)
        app.wait(timeout=10)
    _wait_for(lambda: not any(_running(pid) for pid in pids), seconds=5)
