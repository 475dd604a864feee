"""Terminal chat: ``python -m assistant chat [--resume [ID|last]] [--model PATH]
[--server URL [--server-model NAME] [--server-window N]] [--mode local|standard]
[--workspace DIR] [--yes] [--max-tokens N]``.

The terminal face of :class:`~assistant.service.service.ChatService`: one message per line
from stdin, the reply streamed to stdout, notices to stderr. Ctrl-C stops the reply
without exiting; end of input exits 0. Options apply to this run only."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from types import FrameType
from typing import NoReturn, TextIO

from pydantic import ValidationError

from assistant.config import MODE_NAMES, Settings, load_settings
from assistant.conversation import Conversation, Message, ToolCall
from assistant.service.events import (
    ConversationReset,
    ExportPathNeeded,
    ModelStateRestored,
    ModelSwitchSuggested,
    PrefillTuned,
    ReplyStats,
    ServiceEvent,
    StatusChanged,
)
from assistant.service.progress import stats_line
from assistant.service.service import ChatService
from assistant.service.status import Phase
from assistant.service.terminal import terminal_service
from assistant.service.values import (
    AssistantDelta,
    ChatInput,
    CompactionStarted,
    ContextChanged,
    MessageAdded,
    Notice,
    ToolCallStarted,
    TurnFinished,
    context_line,
    is_branch_summary,
    parse_input,
)
from assistant.service.view import ServiceView
from assistant.tools.approval import Approver, AutoApprover
from assistant.tools.registry import ToolRegistry

from .approvals import ScopedApprover, TerminalApprover, parse_yes
from .terminal import Visible, Writer, never_fail_to_encode
from .terminal import read_line as _read_line

#: Status phases worth a line on stderr (the others show as the reply and tool lines).
_SHOWN_PHASES = (Phase.LOADING_MODEL, Phase.FAILED, Phase.STOPPING)


class TerminalPrinter:
    """Renders the service's events: the conversation on ``out``, the rest on ``err``; both
    show control characters (an escape sequence in a reply, a tool output or a file name) as
    text (:class:`~.terminal.Visible`)."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out: Writer = Visible(out)
        self.err: Writer = Visible(err)
        self.streamed = False

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, AssistantDelta):
            self.out.write(event.text)
            self.streamed = True
        elif isinstance(event, MessageAdded):
            self._message_added(event.message)
        elif isinstance(event, ToolCallStarted):
            self.err.write(_call_line(event.call))
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
        elif isinstance(event, StatusChanged):
            if event.status.phase in _SHOWN_PHASES:
                self.err.write(f"[status] {event.status.text}\n")
        elif isinstance(event, ConversationReset) and event.chat_id is None:
            self.err.write("[chat] new chat\n")
        elif isinstance(event, ReplyStats):
            self.err.write(stats_line(event) + "\n")
        elif isinstance(event, ModelStateRestored):
            if event.tokens:
                self.err.write(
                    f"[resume] loaded this chat's saved model state: {event.tokens:,} tokens "
                    f"in {event.seconds:.2f} s\n"
                )
            elif event.miss:
                self.err.write(f"[resume] no saved model state used: {event.miss}\n")
        elif isinstance(event, PrefillTuned):
            self.err.write(f"[prefill] {event.text}\n")
        elif isinstance(event, ModelSwitchSuggested):
            self.err.write(
                f"[info] This chat was last used with {event.chat_model}; answering with "
                f"{event.loaded_model} (start with --model {event.chat_model} to use it).\n"
            )
        elif isinstance(event, ExportPathNeeded):
            self.err.write("[info] Usage: /export PATH (.md for Markdown, .json for JSON)\n")
        self.err.flush()
        self.out.flush()

    def _message_added(self, msg: Message) -> None:
        if msg.role == "assistant" and self.streamed:
            self.out.write(" [stopped]\n" if msg.stopped else "\n")
            self.streamed = False
        elif msg.role == "tool":
            self.err.write(_result_line(msg))
            if msg.initiated_by == "user":
                self.out.write(msg.content.rstrip() + "\n")

    def history(self, conv: Conversation, title: str, chat_id: str) -> None:
        """A resumed chat's earlier messages: ``> `` before what the user typed."""
        count = len(conv.messages)
        self.err.write(f"[chat] resumed “{title}” ({chat_id}), {count} messages\n")
        for msg in conv.messages:
            if msg.role == "user" and is_branch_summary(msg):
                self.out.write("[summary of another branch]\n")
            elif msg.role == "user":
                self.out.write("".join(f"> {line}\n" for line in msg.content.splitlines()))
            elif msg.role == "assistant":
                self.out.write("".join(_call_line(call) for call in msg.tool_calls))
                if msg.content.strip():
                    stopped = " [stopped]" if msg.stopped else ""
                    self.out.write(f"{msg.content.rstrip()}{stopped}\n")
            elif msg.role == "tool":
                self.out.write(_result_line(msg))
        self.err.write("[chat] end of earlier messages\n")
        self.err.flush()
        self.out.flush()

    def _context(self, event: ContextChanged) -> None:
        line = context_line(event.event)
        if isinstance(event.event, CompactionStarted):
            line += " (Ctrl-C to cancel)"
        self.err.write(f"[context] {line}\n")


def _call_line(call: ToolCall) -> str:
    return f"[tool] {call.name}({call.arguments_json()})\n"


def _result_line(msg: Message) -> str:
    status = "error" if msg.is_error else "result"
    return f"[{msg.name} {status}: {len(msg.content):,} chars]\n"


class _Parser(argparse.ArgumentParser):
    """Options refused in one line (argparse prints its usage first), standard input unread."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, refusal(message))


def refusal(problem: str) -> str:
    """The one line a refused option gets: the problem, what to run, and that a piped
    message was not read (so it is not lost)."""
    kept = "" if sys.stdin is None or sys.stdin.isatty() else "; nothing was read from stdin"
    return f"assistant chat: error: {problem} (see --help{kept})\n"


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="assistant chat", description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="registered model name or path to a GGUF file")
    parser.add_argument(
        "--server", metavar="URL",
        help="use an OpenAI-compatible server at URL (e.g. http://127.0.0.1:8080)",
    )
    parser.add_argument(
        "--server-model", metavar="NAME", help="the server's model (default: the first listed)"
    )
    parser.add_argument(
        "--server-window", type=int, metavar="N",
        help="the server's context window when it does not report it",
    )
    parser.add_argument("--mode", choices=MODE_NAMES)
    parser.add_argument("--workspace", help="folder the tools may read and change")
    parser.add_argument(
        "--yes", nargs="?", const="all", action="append", metavar="SCOPE",
        help="approve without asking: all (the default), write (file changes), run "
        "(commands) or a tool name; comma-separated or repeated",
    )
    parser.add_argument("--max-tokens", type=int, help="longest reply, in tokens")
    parser.add_argument(
        "--resume", nargs="?", const="last", metavar="ID|last",
        help="continue a saved chat: its id, part of its title, or last (the default)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    never_fail_to_encode()
    out, err = sys.stdout, sys.stderr
    loaded = load_settings()
    if loaded.notice:
        err.write(f"[warning] {loaded.notice}\n")
    settings = loaded.settings
    if args.model:
        settings.model = args.model
    problem = _apply_options(settings, args)
    if problem is None:
        try:
            approve_all, approved = parse_yes(args.yes or (), ToolRegistry.default().names())
        except ValueError as exc:
            problem = str(exc)
    if problem is not None:
        err.write(refusal(problem))
        return 2
    if approve_all:
        settings.tool_approval = "auto"
    approver: Approver = (
        AutoApprover()
        if approve_all
        else ScopedApprover(approved, TerminalApprover(err))
    )
    printer = TerminalPrinter(out, err)
    service = terminal_service(settings, approver, printer)
    try:
        return _run(service, printer, args.resume)
    finally:
        service.shutdown()


def _apply_options(settings: Settings, args: argparse.Namespace) -> str | None:
    """Put the options into ``settings``, each checked as the settings check it; the first
    problem, named by its option (``--max-tokens: Input should be greater than or equal to
    16``), or None."""
    if args.server or args.server_model or args.server_window is not None:
        problem = _use_server(settings, args)
        if problem:
            return problem
    workspace = args.workspace
    if workspace and os.path.exists(workspace) and not os.path.isdir(workspace):
        return f"--workspace: {workspace} is a file, not a folder"
    options = (
        (settings, "mode", args.mode, "--mode"),
        (settings, "workspace", workspace or None, "--workspace"),
        (settings.sampling, "max_reply_tokens", args.max_tokens, "--max-tokens"),
    )
    for target, field, value, option in options:
        problem = _set(target, field, value, option)
        if problem:
            return problem
    return None


def _set(target: object, field: str, value: object, option: str) -> str | None:
    """``target.field = value`` (nothing for None); the problem, named by ``option``."""
    if value is None:
        return None
    try:
        setattr(target, field, value)
    except ValidationError as exc:
        msg = str(exc.errors()[0].get("msg", exc)).removeprefix("Value error, ")
        return f"{option}: {msg}"
    return None


def _use_server(settings: Settings, args: argparse.Namespace) -> str | None:
    """Point ``settings`` at the server the options name; the problem, if any, named by the
    option that caused it (``--server-window 0``: the window the server reports)."""
    server = settings.engine.server
    options = {
        "base_url": (args.server, "--server"),
        "model": (args.server_model, "--server-model"),
        "window": (args.server_window, "--server-window"),
    }
    for field, (value, option) in options.items():
        problem = _set(server, field, None if value == "" else value, option)
        if problem:
            return problem
    settings.engine.kind = "server"
    return None


def _run(service: ChatService, printer: TerminalPrinter, resume: str | None) -> int:
    err = printer.err
    if resume is not None:
        if not service.resume(resume):
            return 1  # the service said why (no such chat, or it is open elsewhere)
        handle = service.chat.handle
        assert handle is not None
        printer.history(handle.conversation, handle.title, handle.chat_id)
    kept = False
    if service.settings.engine.kind == "server":
        # The first message is saved before any connection is tried: a server that is not
        # there (or hangs) never loses what was typed or piped.
        first = _read_line()
        if first is None and resume is None:
            return 0
        if first is not None and first.strip():
            kept = _keep_or_submit(service, first)
    service.load_model()  # the worker runs inline: loaded (or failed) on return
    info = service.model.info
    if info is None:
        err.write(f"error: {service.model.error}\n")
        if sys.stdin.isatty():
            err.write("[chat] No model: what you type now is saved in the chat, unanswered "
                      "(Ctrl-D ends).\n")
        err.flush()
        _keep_the_rest(service, err, kept)
        return 1
    view = ServiceView(service)
    err.write(f"[model] {info.name}, window {info.context_window:,} tokens; "
              f"{view.policy().describe()}\n")
    for line in view.server_report():
        err.write(f"[server] {line}\n")
    err.flush()

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        service.stop()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        if kept or _ends_unanswered(service):
            if not kept:
                err.write("[chat] answering the last message, kept unanswered before\n")
                err.flush()
            service.answer_kept()
        while True:
            text = _read_line()
            if text is None:
                break
            if text.strip():
                service.submit(text)
    finally:
        signal.signal(signal.SIGINT, previous)
    return 0


def _ends_unanswered(service: ChatService) -> bool:
    """The open chat ends with a user message kept unanswered (no model was there)."""
    handle = service.chat.handle
    messages = handle.conversation.messages if handle is not None else []
    return bool(messages) and messages[-1].role == "user" and not is_branch_summary(messages[-1])


def _keep_or_submit(service: ChatService, text: str) -> bool:
    """Save a message unanswered (True); a command goes to the service."""
    if isinstance(parse_input(text), ChatInput):
        return service.keep_unsent(text)
    service.submit(text)
    return False


def _keep_the_rest(service: ChatService, err: Writer, kept: bool) -> None:
    """No model: save the messages still to come, unanswered, and say how to continue."""
    count = int(kept)
    skipped = 0
    while (text := _read_line()) is not None:
        if not text.strip():
            continue
        if isinstance(parse_input(text), ChatInput):
            count += service.keep_unsent(text)
        else:
            skipped += 1
    if count and service.chat.chat_id:
        noun = "message" if count == 1 else "messages"
        err.write(
            f"[chat] {count} {noun} kept in chat {service.chat.chat_id}, not answered; continue "
            f"it with: python -m assistant chat --resume {service.chat.chat_id}\n"
        )
    if skipped:
        err.write(f"[chat] {skipped} command(s) not run: no model\n")
    err.flush()
