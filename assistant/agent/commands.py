"""What the user typed: a chat message, a tool command, or an app command (``//text`` and a
path like ``/etc/hosts`` are messages; an unknown ``/word`` is an error, not sent)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from assistant.config import MODE_NAMES

AppCommandName = Literal["help", "clear", "compact", "model", "mode", "resume", "export"]


@dataclass(frozen=True)
class CommandSpec:
    """One command as the parser, ``/help`` and the completion popup all read it."""

    #: What the user types first: ``/name``, or ``!`` for a shell command.
    command: str
    #: Its arguments as shown (``[optional]``, ``PLACEHOLDER``).
    arguments: str
    #: One line for ``/help`` and the popup.
    description: str
    #: ``app``: handled by the app layer; ``tool``: runs a tool and enters the chat.
    kind: Literal["app", "tool", "shell"]

    @property
    def name(self) -> str:
        return self.command.lstrip("/!")

    @property
    def usage(self) -> str:
        if self.kind == "shell":
            return f"!{self.arguments}"
        return f"{self.command} {self.arguments}".strip()


#: Every command, in the order ``/help`` and the popup list them.
COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("/read", "PATH [START-END]",
                "show a workspace file (or drop a file on the window)", "tool"),
    CommandSpec("/ls", "[PATH]", "list a workspace folder", "tool"),
    CommandSpec("/find", "GLOB", "find files by name, e.g. /find *.md", "tool"),
    CommandSpec("/grep", "PATTERN [PATH]", "search file contents", "tool"),
    CommandSpec("!", "COMMAND", "run a shell command in the workspace", "shell"),
    CommandSpec("/compact", "[focus]", "summarize older messages now", "app"),
    CommandSpec("/clear", "", "start a new, empty chat", "app"),
    CommandSpec("/model", "[name]", "show or switch the model", "app"),
    CommandSpec("/mode", f"[{'|'.join(MODE_NAMES)}]", "show or switch the context policy", "app"),
    CommandSpec("/resume", "[id]", "reopen an earlier chat", "app"),
    CommandSpec("/export", "[path.md|path.json]", "save this chat as Markdown or JSON", "app"),
    CommandSpec("/help", "", "this list", "app"),
)

APP_COMMANDS: tuple[AppCommandName, ...] = get_args(AppCommandName)
TOOL_COMMANDS = tuple(c.name for c in COMMANDS if c.kind == "tool")


def _help_text() -> str:
    width = max(len(c.usage) for c in COMMANDS) + 3
    lines = ["Commands:"]
    lines += [f"  {c.usage.ljust(width)}{c.description}" for c in COMMANDS]
    lines.append("Tool results enter the chat; ask the assistant about them in your next message.")
    lines.append("Start a message with // to send a line that begins with /.")
    return "\n".join(lines)


HELP_TEXT = _help_text()

_COMMAND_WORD = re.compile(r"/([A-Za-z][A-Za-z_-]*)(?=\s|$)")
_RANGE = re.compile(r"^(\d+)(?:[-:](\d+))?$")


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
    """A command for the app layer (window or terminal chat)."""

    name: AppCommandName
    argument: str = ""


@dataclass(frozen=True)
class CommandError:
    """Input that looks like a command but cannot be run; ``message`` says how to fix it."""

    message: str


ParsedInput = ChatInput | ToolCommand | AppCommand | CommandError


def parse_input(text: str) -> ParsedInput:
    """Classify one line (or block) of user input. Never raises."""
    stripped = text.strip()
    if stripped.startswith("//"):
        return ChatInput(text.lstrip()[1:])
    if stripped.startswith("!"):
        command = stripped[1:].strip()
        if not command:
            return CommandError("Usage: !COMMAND, for example !ls -la")
        return ToolCommand("run_command", {"command": command})
    match = _COMMAND_WORD.match(stripped)
    if not match:
        return ChatInput(text)
    word = match.group(1).lower()
    rest = stripped[match.end() :].strip()
    if word in APP_COMMANDS:
        return AppCommand(cast(AppCommandName, word), rest)
    if word in TOOL_COMMANDS:
        return _tool_command(word, rest)
    return CommandError(f"Unknown command /{word}. Type /help for the list.")


def _split(rest: str) -> list[str] | None:
    try:
        return shlex.split(rest, posix=True)
    except ValueError:
        return None


def _tool_command(word: str, rest: str) -> ParsedInput:
    if word == "read":
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
    if word == "ls":
        return ToolCommand("list_dir", {"path": _unquote(rest) or "."})
    if word == "find":
        if not rest:
            return CommandError("Usage: /find GLOB, for example /find *.md")
        return ToolCommand("find_files", {"pattern": _unquote(rest)})
    # grep
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


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text
