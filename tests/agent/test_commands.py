"""The input parser shared by the window and the terminal chat."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assistant.agent.commands import (
    APP_COMMANDS,
    BY_NAME,
    COMMANDS,
    HELP_ROWS,
    HELP_TEXT,
    AppCommand,
    ChatInput,
    CommandError,
    ToolCommand,
    parse_input,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello", ChatInput("hello")),
        ("/read notes.txt", ToolCommand("read_file", {"path": "notes.txt"})),
        (
            "/read my notes.txt 3-9",
            ToolCommand(
                "read_file", {"path": "my notes.txt", "start_line": 3, "end_line": 9}
            ),
        ),
        (
            "/read a.txt 12",
            ToolCommand("read_file", {"path": "a.txt", "start_line": 12}),
        ),
        (
            '/read "with space.txt"',
            ToolCommand("read_file", {"path": "with space.txt"}),
        ),
        ("/ls", ToolCommand("list_dir", {"path": "."})),
        ("/ls docs", ToolCommand("list_dir", {"path": "docs"})),
        ("/find *.md", ToolCommand("find_files", {"pattern": "*.md"})),
        ("/grep TODO", ToolCommand("grep", {"pattern": "TODO"})),
        (
            '/grep "a b" src',
            ToolCommand("grep", {"pattern": "a b", "path": "src"}),
        ),
        ("!ls -la", ToolCommand("run_command", {"command": "ls -la"})),
        ("/help", AppCommand("help")),
        ("/clear", AppCommand("clear")),
        ("/compact", AppCommand("compact")),
        ("/compact keep the dates", AppCommand("compact", "keep the dates")),
        ("/model", AppCommand("model")),
        ("/mode standard", AppCommand("mode", "standard")),
        ("/resume abc123", AppCommand("resume", "abc123")),
        ("/export chat.md", AppCommand("export", "chat.md")),
        ("/HELP", AppCommand("help")),
        ("/etc/hosts is odd", ChatInput("/etc/hosts is odd")),
        ("//read this literally", ChatInput("/read this literally")),
        ("/ nothing", ChatInput("/ nothing")),
    ],
)
def test_parse(text: str, expected: object) -> None:
    assert parse_input(text) == expected


@pytest.mark.parametrize(
    "text", ["/read", "/find", "/grep", "!", "!   ", '/grep "open', "/grep a b c"]
)
def test_usage_errors(text: str) -> None:
    result = parse_input(text)
    assert isinstance(result, CommandError)
    assert "Usage" in result.message


def test_unknown_command() -> None:
    result = parse_input("/bogus x")
    assert isinstance(result, CommandError) and "/help" in result.message


def test_help_lists_every_command() -> None:
    for word in (
        "/read",
        "/ls",
        "/find",
        "/grep",
        "!COMMAND",
        "/compact",
        "/clear",
        "/model",
        "/mode",
        "/resume",
        "/export",
        "/help",
    ):
        assert word in HELP_TEXT


def test_one_table_feeds_the_parser_and_help() -> None:
    """/help, the parser and the window's popup read the same table (they once disagreed:
    /help said `/export [path]`, the popup `[md|json]`)."""
    assert set(APP_COMMANDS) == {c.name for c in COMMANDS if c.kind == "app"}
    for spec in COMMANDS:
        assert spec.usage in HELP_TEXT and spec.description in HELP_TEXT
        typed = spec.command + (" x" if spec.kind != "app" else "")
        parsed = parse_input(typed)
        expected = {"app": AppCommand, "tool": ToolCommand, "shell": ToolCommand}[spec.kind]
        assert isinstance(parsed, expected), (spec, parsed)


@given(st.text())
def test_never_raises(text: str) -> None:
    result = parse_input(text)
    assert isinstance(result, ChatInput | ToolCommand | AppCommand | CommandError)


def test_each_command_parses_through_its_own_entry_of_the_table() -> None:
    """Issue 42: one table: a tool command's arguments are read by its entry's parser, an
    app command gets the rest of the line; every entry has its /help row."""
    assert [(r.usage, r.description) for r in HELP_ROWS] == [
        (c.usage, c.description) for c in COMMANDS
    ]
    for spec in COMMANDS:
        if spec.kind == "shell":
            continue
        assert BY_NAME[spec.name] is spec
        typed = f"{spec.command} notes.md"
        assert parse_input(typed) == spec.parsed("notes.md")
        if spec.kind == "app":
            assert parse_input(typed) == AppCommand(spec.name, "notes.md")
        else:
            assert spec.parse is not None and isinstance(parse_input(typed), ToolCommand)
