"""grep's line scans in a worker process (assistant/tools/scan_worker.py), kept warm between
searches, so a pattern matching millions of lines does not hold the app's GIL: RE2 itself
runs without it, but the Python loop around each match holds it, and the window got a few
timer ticks a second during a catastrophic grep (issue 18, item 2).

The app still walks, opens and reads every file inside the sandbox; the worker gets only the
bytes. Stop kills the worker (a new one starts at the next search); the time budget is
checked in the worker between steps, as it was here. Where no worker can start (Windows, or
a failed start) the scan runs in this process, with the same results.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from assistant.tools.scan_worker import receive, send
from assistant.tools.search import LineSearcher, SearchStopped, stop_check
from assistant.tools.walk import WalkBudget

#: The hidden command of ``python -m assistant`` that runs a worker.
WORKER_COMMAND = "_grep-worker"
#: How often Stop is looked at while the worker scans.
POLL_S = 0.05
#: Idle workers kept for the next search.
MAX_IDLE = 1

Lines = list[tuple[int, bytes]]


class ScanWorker:
    """One worker process and its pipes."""

    def __init__(self) -> None:
        root: str | None = None
        env = None
        if not getattr(sys, "frozen", False):  # this checkout's ``assistant``, not another
            root = str(Path(__file__).resolve().parents[2])
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            _command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
            cwd=root, env=env, start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()

    def scan(self, pattern: str, ignore_case: bool, data: bytes, want: int,
             budget: WalkBudget) -> tuple[Lines, int, bool]:
        """The worker's reply for ``data`` (scan_worker's docstring); raises SearchStopped on
        Stop (the worker is then mid-scan: kill it), OSError or EOFError if it died."""
        send(self._in, (pattern, ignore_case, want, budget.started, budget.seconds), data)
        frame = receive(self._out, self._waiter(budget.cancelled))
        if frame is None:
            raise EOFError("the grep worker exited")
        shown, more, over = frame[0]
        return shown, more, over

    def _waiter(self, cancelled: Callable[[], bool]) -> Callable[[], None]:
        def wait() -> None:
            while True:
                if cancelled():
                    raise SearchStopped
                if select.select([self._out], [], [], POLL_S)[0]:
                    return

        return wait

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        with _lock:
            _live.discard(self)


_lock = threading.Lock()
_idle: list[ScanWorker] = []
_live: set[ScanWorker] = set()


def _command() -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable, WORKER_COMMAND]
    return [sys.executable, "-m", "assistant", WORKER_COMMAND]


def _take() -> ScanWorker | None:
    """An idle worker, or a new one; None where workers cannot run here."""
    if os.name == "nt":  # select() cannot wait on pipes there
        return None
    with _lock:
        while _idle:
            worker = _idle.pop()
            if worker.alive():
                return worker
            _live.discard(worker)
    try:
        worker = ScanWorker()
    except OSError:
        return None
    with _lock:
        _live.add(worker)
    return worker


def _give_back(worker: ScanWorker) -> None:
    with _lock:
        if worker.alive() and len(_idle) < MAX_IDLE:
            _idle.append(worker)
            return
    worker.kill()


@atexit.register
def shutdown() -> None:
    """Kill every worker (at exit; tests call it too)."""
    with _lock:
        workers = list(_live)
        _idle.clear()
    for worker in workers:
        worker.kill()


def worker_pids() -> set[int]:
    """The process ids of the workers running now (for tests and diagnostics)."""
    with _lock:
        return {w.proc.pid for w in _live if w.alive()}


class LineScan:
    """One grep's scans, file after file: in a worker, else in this process. Close it."""

    def __init__(self, searcher: LineSearcher, pattern: str, ignore_case: bool) -> None:
        self.searcher = searcher
        self.pattern = pattern
        self.ignore_case = ignore_case
        self._worker: ScanWorker | None = None
        self._started = False  # a worker is taken at the first file, not before

    def lines(self, data: bytes, want: int, budget: WalkBudget) -> tuple[Lines, int]:
        """The first ``want`` matching lines of ``data`` and how many more matched; stops
        (with ``budget.stopped_by`` set) at the time budget, raises SearchStopped on Stop."""
        if not self._started:
            self._started = True
            self._worker = _take()
        worker = self._worker
        if worker is None:
            return self._here(data, want, budget)
        try:
            shown, more, over = worker.scan(self.pattern, self.ignore_case, data, want, budget)
        except (OSError, EOFError):  # the worker died: go on in this process
            self._worker = None
            worker.kill()
            return self._here(data, want, budget)
        except BaseException:
            self._worker = None
            worker.kill()
            raise
        if over:
            budget.over_time()
        return shown, more

    def _here(self, data: bytes, want: int, budget: WalkBudget) -> tuple[Lines, int]:
        shown: Lines = []
        more = 0
        for number, line in self.searcher.lines(data, stop_check(budget.cancelled,
                                                                 budget.over_time)):
            if len(shown) < want:
                shown.append((number, line))
            else:
                more += 1
        return shown, more

    def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            _give_back(worker)
