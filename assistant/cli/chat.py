"""Terminal chat: ``python -m assistant chat [--model PATH] [--mode local|standard]
[--workspace DIR] [--yes]``.

Reads one message per line from stdin and streams the reply to stdout. Ctrl-C stops the
reply being written (the partial reply is kept, marked stopped) without exiting; end of
input exits 0. Tool commands (/read, /ls, /find, /grep, !cmd) and /compact, /mode, /help
work as in the window. Notices (pruning, compaction, errors) go to stderr so stdout holds
only the conversation. The chat is saved like a window chat (see ``python -m assistant``).
"""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType
from typing import TextIO

from assistant.agent.commands import HELP_TEXT, AppCommand
from assistant.agent.events import (
    AgentEvent,
    AssistantDelta,
    ContextChanged,
    MessageAdded,
    Notice,
    ToolCallStarted,
    TurnFinished,
)
from assistant.compaction.events import (
    CompactionCancelled,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    PruneEvent,
)
from assistant.config import Settings, load_settings
from assistant.conversation import Conversation
from assistant.engine import build_engine
from assistant.llm.base import CancelToken, ModelLoadError
from assistant.settings_check import check_against_model
from assistant.tools.approval import (
    ApprovalDecision,
    ApprovalRequest,
    AutoApprover,
    DenyingApprover,
)


class TerminalApprover:
    """Asks on the controlling terminal (stdin carries the chat); no terminal: deny."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        try:
            with open("/dev/tty", "r+", encoding="utf-8") as tty:
                tty.write(
                    f"\n{request.summary}\n{request.preview}\nAllow? [y]es once / "
                    "[a]lways in this chat / [N]o: "
                )
                tty.flush()
                answer = tty.readline().strip().lower()
        except OSError:
            self.err.write(f"[denied: no terminal to ask] {request.summary}\n")
            return ApprovalDecision.DENY
        if answer in {"a", "always"}:
            return ApprovalDecision.ALLOW_FOR_CHAT
        if answer in {"y", "yes"}:
            return ApprovalDecision.ALLOW_ONCE
        return ApprovalDecision.DENY


class TerminalPrinter:
    """Turns agent events into terminal output."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.streamed = False

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, AssistantDelta):
            self.out.write(event.text)
            self.out.flush()
            self.streamed = True
        elif isinstance(event, MessageAdded):
            msg = event.message
            if msg.role == "assistant" and self.streamed:
                self.out.write(" [stopped]\n" if msg.stopped else "\n")
                self.streamed = False
            elif msg.role == "tool":
                status = "error" if msg.is_error else "result"
                self.err.write(f"[{msg.name} {status}: {len(msg.content):,} chars]\n")
                if msg.initiated_by == "user":
                    self.out.write(msg.content.rstrip() + "\n")
        elif isinstance(event, ToolCallStarted):
            self.err.write(f"[tool] {event.call.name}({event.call.arguments_json()})\n")
        elif isinstance(event, Notice):
            self.err.write(f"[{event.level}] {event.text}\n")
        elif isinstance(event, ContextChanged):
            self._context(event)
        elif isinstance(event, TurnFinished):
            if self.streamed:
                self.out.write("\n")
                self.streamed = False
            if event.error:
                self.err.write(f"[error] {event.error}\n")
        self.err.flush()
        self.out.flush()

    def _context(self, event: ContextChanged) -> None:
        ev = event.event
        if isinstance(ev, PruneEvent):
            self.err.write(
                f"[context] Cleared {len(ev.message_ids)} old tool outputs, "
                f"{ev.tokens_freed:,} tokens\n"
            )
        elif isinstance(ev, CompactionStarted):
            self.err.write(f"[context] Compacting ({ev.reason})... (Ctrl-C to cancel)\n")
        elif isinstance(ev, CompactionFinished):
            r = ev.record
            self.err.write(
                f"[context] Compacted from {r.tokens_before:,} to {r.tokens_after:,} tokens\n"
            )
        elif isinstance(ev, CompactionFailed):
            self.err.write(f"[context] Compaction failed: {ev.error}\n")
        elif isinstance(ev, CompactionCancelled):
            self.err.write("[context] Compaction cancelled\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assistant chat", description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="registered model name or path to a GGUF file")
    parser.add_argument("--mode", choices=["local", "standard"])
    parser.add_argument("--workspace", help="folder the tools may read and change")
    parser.add_argument("--yes", action="store_true", help="approve tool writes and commands")
    parser.add_argument("--max-tokens", type=int, help="longest reply, in tokens")
    args = parser.parse_args(argv)
    out, err = sys.stdout, sys.stderr

    loaded = load_settings()
    if loaded.notice:
        err.write(f"[warning] {loaded.notice}\n")
    settings = loaded.settings
    if args.model:
        settings.model = args.model
    if args.mode:
        settings.mode = args.mode
    if args.workspace:
        settings.workspace = args.workspace
    if args.max_tokens:
        settings.sampling.max_reply_tokens = args.max_tokens
    if args.yes:
        settings.tool_approval = "auto"

    from assistant.llm.llama_backend import LlamaBackend
    from assistant.llm.registry import resolve_model

    _, entry = resolve_model(settings.model)
    window = settings.effective_policy(entry.context_length if entry else None).window
    try:
        backend = LlamaBackend.load(settings.model, n_ctx=window, threads=settings.sampling.threads)
    except ModelLoadError as exc:
        err.write(f"error: {exc}\n")
        return 1
    current = settings

    def get_settings() -> Settings:
        return current

    printer = TerminalPrinter(out, err)
    approver = (
        AutoApprover()
        if args.yes
        else (TerminalApprover(err) if sys.stdin.isatty() else DenyingApprover())
    )
    engine = build_engine(backend, get_settings, approver, printer)
    err.write(
        f"[model] {backend.info.name}, window {backend.info.context_window:,} tokens; "
        f"{settings.effective_policy(backend.info.trained_context).describe()}\n"
    )
    for problem in check_against_model(
        settings, backend.info.trained_context, backend.count
    ).errors:
        err.write(f"[warning] {problem}\n")
    conv = Conversation()
    cancel = CancelToken()

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        cancel.cancel()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        while True:
            try:
                line = sys.stdin.readline()
            except KeyboardInterrupt:  # pragma: no cover - only between handler swaps
                continue
            if not line:
                break
            text = line.rstrip("\n")
            if not text.strip():
                continue
            cancel.reset()
            command = engine.agent.handle_input(conv, text, cancel)
            if isinstance(command, AppCommand):
                current = _app_command(command, current, conv, err)
                if command.name == "clear":
                    conv = Conversation()
                    engine.agent.reset_approvals()
    finally:
        signal.signal(signal.SIGINT, previous)
        backend.close()
    return 0


def _app_command(
    command: AppCommand, settings: Settings, conv: Conversation, err: TextIO
) -> Settings:
    """The app commands a terminal can honour; returns the (possibly changed) settings."""
    if command.name == "help":
        err.write(HELP_TEXT + "\n")
    elif command.name == "mode":
        arg = (command.argument or "").strip()
        if arg in ("local", "standard"):
            settings = settings.model_copy(update={"mode": arg})
            err.write(f"[mode] now {arg}\n")
        else:
            err.write(f"[mode] {settings.mode} (use /mode local or /mode standard)\n")
    elif command.name == "clear":
        err.write("[chat] cleared\n")
    else:
        err.write(f"[info] /{command.name} is available in the window\n")
    return settings
