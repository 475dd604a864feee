"""Approvals in the terminal chat: asked on ``/dev/tty`` (stdin carries the chat), or scoped
by ``--yes`` (docs/ARCHITECTURE.md, "Tool safety beyond paths")."""

from __future__ import annotations

import os
import select
import struct
from collections.abc import Iterable
from typing import TextIO

try:
    import fcntl
    import termios
except ImportError:  # pragma: no cover - not POSIX
    termios = None  # type: ignore[assignment]

from assistant.service.values import CancelToken
from assistant.textsafe import terminal_text
from assistant.tools.approval import ApprovalDecision, ApprovalRequest, Approver

TTY = "/dev/tty"
#: ``--yes=SCOPE``: the tools each scope approves.
SCOPES: dict[str, frozenset[str]] = {
    "write": frozenset({"write_file", "edit_file"}),
    "run": frozenset({"run_command"}),
}
ALL = "all"
#: The longest preview shown at the question (the rest is counted, not shown).
PREVIEW_LINES = 40
PREVIEW_CHARS = 4000
#: Said (once) when a question found input typed before it.
TYPED_AHEAD = (
    "\n[approval] What was typed before this question was discarded; only an answer typed "
    "after it counts."
)
_LONGEST_ANSWER = 1024
_POLL_S = 0.1


def parse_yes(values: Iterable[str], tool_names: Iterable[str]) -> tuple[bool, frozenset[str]]:
    """``--yes`` values as (approve everything, the tools approved); ValueError for a bad scope."""
    known = set(tool_names)
    tools: set[str] = set()
    everything = False
    for value in values:
        for scope in (part.strip() for part in value.split(",")):
            if scope == ALL:
                everything = True
            elif scope in SCOPES:
                tools |= SCOPES[scope]
            elif scope in known:
                tools.add(scope)
            else:
                names = ", ".join(sorted(known))
                raise ValueError(
                    f"--yes: unknown scope {scope!r}; use write, run, all or a tool name "
                    f"({names})"
                )
    return everything, frozenset(tools)


class ScopedApprover:
    """Approves the ``allowed`` tools at once and asks ``ask`` about the others."""

    def __init__(self, allowed: frozenset[str], ask: Approver) -> None:
        self.allowed = allowed
        self.ask = ask

    def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        if request.tool in self.allowed:
            return ApprovalDecision.ALLOW_ONCE
        return self.ask.request_approval(request)


class TerminalApprover:
    """Asks on the controlling terminal; with none, denies and says how to allow."""

    def __init__(self, err: TextIO, tty: str = TTY) -> None:
        self.err = err
        self.tty = tty
        #: Whether the terminal was told that input typed before a question is discarded.
        self.told = False

    def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        try:
            fd = os.open(self.tty, os.O_RDWR | os.O_NOCTTY)
        except OSError:
            return self._deny(request, "no terminal to ask")
        try:
            text = question(request)
            if discard_typed_ahead(fd) and not self.told:
                self.told = True
                text = TYPED_AHEAD + text
            _write_all(fd, text.encode("utf-8", errors="replace"))
            answer = _read_line(fd, request.cancel)
            if answer is None:
                _write_all(fd, b"\n")
        except OSError:
            return self._deny(request, "the terminal could not be used")
        finally:
            os.close(fd)
        if answer is None:
            return self._deny(request, "no answer (stopped or end of input)")
        answer = answer.strip().lower()
        if answer in {"a", "always"}:
            return ApprovalDecision.ALLOW_FOR_CHAT
        if answer in {"y", "yes"}:
            return ApprovalDecision.ALLOW_ONCE
        self.err.write(f"[denied] {shown(request.summary)}\n")
        self.err.flush()
        return ApprovalDecision.DENY

    def _deny(self, request: ApprovalRequest, why: str) -> ApprovalDecision:
        scope = next((name for name, tools in SCOPES.items() if request.tool in tools), None)
        allow = f"--yes={scope} or --yes={request.tool}" if scope else f"--yes={request.tool}"
        self.err.write(f"[denied: {why}] {shown(request.summary)} (to allow it: {allow})\n")
        self.err.flush()
        return ApprovalDecision.DENY


def shown(text: str) -> str:
    """``text`` with control characters made visible (``\\x1b`` for an escape)."""
    return terminal_text(text)


def question(request: ApprovalRequest) -> str:
    """What the terminal shows: the summary, the preview (cut), the choices."""
    preview = request.preview
    lines = preview.splitlines()
    cut = "\n".join(lines[:PREVIEW_LINES])[:PREVIEW_CHARS]
    if len(cut) < len(preview.rstrip("\n")):
        rest = len(lines) - cut.count("\n") - 1
        cut += f"\n... ({rest:,} more lines not shown)" if rest > 0 else "\n... (cut)"
    body = f"\n{shown(request.summary)}\n" + (f"{shown(cut)}\n" if cut else "")
    return body + "Allow? [y]es once / [a]lways in this chat / [N]o: "


def discard_typed_ahead(fd: int) -> bool:
    """Throw away what was typed at the terminal ``fd`` before the question (lines typed
    while the model wrote must not answer it); whether there was any."""
    if termios is None:  # pragma: no cover - not POSIX
        return False
    try:
        waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        waiting = 0
    try:
        termios.tcflush(fd, termios.TCIFLUSH)
    except (termios.error, OSError):  # not a terminal: nothing is typed ahead there
        return False
    return bool(waiting)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_line(fd: int, cancel: CancelToken | None) -> str | None:
    """One line typed at the terminal; None at end of input or when ``cancel`` fires."""
    data = b""
    while b"\n" not in data and len(data) < _LONGEST_ANSWER:
        if cancel is not None and cancel.cancelled:
            return None
        ready, _, _ = select.select([fd], [], [], _POLL_S)
        if not ready:
            continue
        chunk = os.read(fd, _LONGEST_ANSWER)
        if not chunk:
            return None
        data += chunk
    return data.split(b"\n", 1)[0].decode("utf-8", errors="replace")
