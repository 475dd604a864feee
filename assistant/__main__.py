"""Command line entry: ``python -m assistant [gui|chat|chats|replay|probe|provision|repair]
...``."""

from __future__ import annotations

import importlib
import sys

USAGE = """\
usage: python -m assistant [COMMAND] [OPTIONS]

An offline chat assistant that runs a small language model on this computer.

commands:
  (none), gui          open the desktop window
  chat                 chat in the terminal (one message per line on stdin)
  chats                list saved chats
  repair [ID]          write a repaired copy of a chat with damaged lines
  provision [NAME]     provide a registered model from its wheel (--all: every one)
  replay FILE.jsonl    show what each model call of a transcript would see
  probe [MODEL]        measure how much of its window a model uses well (minutes)

Run `python -m assistant COMMAND --help` for a command's options.
Desktop window options: --help (this text), --smoke-test (start, answer one question, exit).
"""

#: The terminal commands: each module's ``main(args)`` runs one (imported only when used).
COMMANDS = {
    "chat": "assistant.cli.chat",
    "chats": "assistant.cli.chats",
    "provision": "assistant.llm.provision",
    "probe": "assistant.cli.probe",
    "replay": "assistant.replay",
    "repair": "assistant.cli.repair",
    # Internal, not in USAGE: grep's worker process (assistant/tools/scan_pool.py).
    "_grep-worker": "assistant.tools.scan_worker",
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args and not args[0].startswith("-") else "gui"
    rest = args[1:] if args and not args[0].startswith("-") else args
    if command == "help" or (command == "gui" and ("-h" in rest or "--help" in rest)):
        print(USAGE, end="")
        return 0
    if command in COMMANDS:
        return int(importlib.import_module(COMMANDS[command]).main(rest))
    if command == "bench":
        print(
            "the benchmark is a development tool outside the app: run `python -m bench` "
            "from a checkout of the project (`make bench`)",
            file=sys.stderr,
        )
        return 2
    if command == "gui":
        if "--smoke-test" in rest:
            from assistant.smoke import main as smoke_main

            return smoke_main(rest)
        if _no_display():
            print(
                "error: no display found (DISPLAY / WAYLAND_DISPLAY are unset). Run the app "
                "in a desktop session, use `python -m assistant chat` in a terminal, or set "
                "QT_QPA_PLATFORM=offscreen.",
                file=sys.stderr,
            )
            return 1
        missing = _missing_qt_libraries()
        if missing:
            print(missing, file=sys.stderr)
            return 1
        from assistant.app import run_gui

        return run_gui(rest)
    print(f"unknown command {command!r}\n\n{USAGE}", file=sys.stderr, end="")
    return 2


def _missing_qt_libraries() -> str:
    """What to install when Qt's X11 plugin cannot load here (empty: nothing missing)."""
    from assistant.ui import qt_deps

    if not qt_deps.will_use_xcb():
        return ""
    missing = qt_deps.missing_libraries()
    return qt_deps.report(missing) if missing else ""


def _no_display() -> bool:
    import os

    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


if __name__ == "__main__":
    sys.exit(main())
