"""What the user typed: a chat message, a tool command, or an app command (``//text`` and a
path like ``/etc/hosts`` are messages; an unknown ``/word`` is an error, not sent).

:data:`COMMANDS` is the one table of commands: what to type, how its arguments are read,
and its line in ``/help``; the parser, the service's dispatcher (``service/commands.py``,
one handler per app command of the table), ``/help`` and the window's popup read it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from assistant.config import MODE_NAMES


@dataclass(frozen=True)
class ChatInput:
    text: str


@dataclass(frozen=True)
class ToolCommand:
    """A tool the user runs directly; it enters the chat like a model's tool call."""

    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class AppCommand:
    """A command for the app layer (window or terminal chat): a name of :data:`APP_COMMANDS`."""

    name: str
    argument: str = ""


@dataclass(frozen=True)
class CommandError:
    """Input that looks like a command but cannot be run; ``message`` says how to fix it."""

    message: str


ParsedInput = ChatInput | ToolCommand | AppCommand | CommandError


@dataclass(frozen=True)
class CommandSpec:
    """One command as the parser, the dispatcher, ``/help`` and the completion popup all
    read it."""

    #: What the user types first: ``/name``, or ``!`` for a shell command.
    command: str
    #: Its arguments as shown (``[optional]``, ``PLACEHOLDER``).
    arguments: str
    #: One line for ``/help`` and the popup.
    description: str
    #: ``app``: handled by the app layer; ``tool``: runs a tool and enters the chat.
    kind: Literal["app", "tool", "shell"]
    #: The rest of the line as what to run (a tool call, or why it cannot run); an app
    #: command without one gets the rest as its argument.
    parse: Callable[[str], ParsedInput] | None = None

    @property
    def name(self) -> str:
        return self.command.lstrip("/!")

    @property
    def usage(self) -> str:
        if self.kind == "shell":
            return f"!{self.arguments}"
        return f"{self.command} {self.arguments}".strip()

    def parsed(self, rest: str) -> ParsedInput:
        """What ``/name rest`` asks for."""
        if self.parse is None:
            return AppCommand(self.name, rest)
        return self.parse(rest)


@dataclass(frozen=True)
class HelpRow:
    """One line of ``/help``: what to type and what it does (a face lays out the columns)."""

    usage: str
    description: str


_RANGE = re.compile(r"^(\d+)(?:[-:](\d+))?$")


def _shell(rest: str) -> ParsedInput:
    command = rest.strip()
    if not command:
        return CommandError("Usage: !COMMAND, for example !ls -la")
    return ToolCommand("run_command", {"command": command})


def _read(rest: str) -> ParsedInput:
    if not rest:
        return CommandError("Usage: /read PATH [START-END]")
    args: dict[str, Any] = {}
    path = rest
    head, _, last = rest.rpartition(" ")
    m = _RANGE.match(last)
    if head.strip() and m:
        path = head.strip()
        args["start_line"] = int(m.group(1))
        if m.group(2):
            args["end_line"] = int(m.group(2))
    args = {"path": _unquote(path), **args}
    return ToolCommand("read_file", args)


def _ls(rest: str) -> ParsedInput:
    return ToolCommand("list_dir", {"path": _unquote(rest) or "."})


def _find(rest: str) -> ParsedInput:
    if not rest:
        return CommandError("Usage: /find GLOB, for example /find *.md")
    return ToolCommand("find_files", {"pattern": _unquote(rest)})


def _grep(rest: str) -> ParsedInput:
    parts = _split(rest)
    if not parts:
        return CommandError('Usage: /grep PATTERN [PATH] (quote a pattern with spaces: "a b")')
    if len(parts) > 2:
        return CommandError(
            'Usage: /grep PATTERN [PATH]; quote a pattern that contains spaces: /grep "a b"'
        )
    grep_args: dict[str, Any] = {"pattern": parts[0]}
    if len(parts) == 2:
        grep_args["path"] = parts[1]
    return ToolCommand("grep", grep_args)


#: Every command, in the order ``/help`` and the popup list them.
COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("/read", "PATH [START-END]",
                "show a workspace file (or drop a file on the window)", "tool", _read),
    CommandSpec("/ls", "[PATH]", "list a workspace folder", "tool", _ls),
    CommandSpec("/find", "GLOB", "find files by name, e.g. /find *.md", "tool", _find),
    CommandSpec("/grep", "PATTERN [PATH]", "search file contents", "tool", _grep),
    CommandSpec("!", "COMMAND", "run a shell command in the workspace", "shell", _shell),
    CommandSpec("/compact", "[focus]", "summarize older messages now", "app"),
    CommandSpec("/clear", "", "start a new, empty chat", "app"),
    CommandSpec("/model", "[name]", "show or switch the model", "app"),
    CommandSpec("/mode", f"[{'|'.join(MODE_NAMES)}]", "show or switch the context policy", "app"),
    CommandSpec("/resume", "[id]", "reopen an earlier chat", "app"),
    CommandSpec("/export", "[path.md|path.json]", "save this chat as Markdown or JSON", "app"),
    CommandSpec("/help", "", "this list", "app"),
)

#: The commands by the word typed after ``/`` (``!`` is read by its prefix).
BY_NAME: dict[str, CommandSpec] = {c.name: c for c in COMMANDS if c.kind != "shell"}
APP_COMMANDS: tuple[str, ...] = tuple(c.name for c in COMMANDS if c.kind == "app")
TOOL_COMMANDS = tuple(c.name for c in COMMANDS if c.kind == "tool")

#: ``/help``: one row per command, then these lines.
HELP_ROWS: tuple[HelpRow, ...] = tuple(HelpRow(c.usage, c.description) for c in COMMANDS)
HELP_NOTES = (
    "Tool results enter the chat; ask the assistant about them in your next message.",
    "Start a message with // to send a line that begins with /.",
)


def help_text(rows: tuple[HelpRow, ...] = HELP_ROWS) -> str:
    """``/help`` as text, the rows' columns lined up with spaces (for a fixed-width font)."""
    width = max(len(r.usage) for r in rows) + 3
    lines = ["Commands:"]
    lines += [f"  {r.usage.ljust(width)}{r.description}" for r in rows]
    lines += HELP_NOTES
    return "\n".join(lines)


HELP_TEXT = help_text()

_COMMAND_WORD = re.compile(r"/([A-Za-z][A-Za-z_-]*)(?=\s|$)")


def parse_input(text: str) -> ParsedInput:
    """Classify one line (or block) of user input. Never raises."""
    stripped = text.strip()
    if stripped.startswith("//"):
        return ChatInput(text.lstrip()[1:])
    if stripped.startswith("!"):
        return _shell(stripped[1:])
    match = _COMMAND_WORD.match(stripped)
    if not match:
        return ChatInput(text)
    word = match.group(1).lower()
    spec = BY_NAME.get(word)
    if spec is None:
        return CommandError(f"Unknown command /{word}. Type /help for the list.")
    return spec.parsed(stripped[match.end() :].strip())


def _split(rest: str) -> list[str] | None:
    try:
        return shlex.split(rest, posix=True)
    except ValueError:
        return None


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text
