"""Command line entry: ``python -m assistant [gui|chat|chats|replay|bench|provision|repair] ...``.

With no sub-command the desktop window opens.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args and not args[0].startswith("-") else "gui"
    rest = args[1:] if args and not args[0].startswith("-") else args
    if command == "chat":
        from assistant.cli.chat import main as chat_main

        return chat_main(rest)
    if command == "chats":
        from assistant.cli.chats import main as chats_main

        return chats_main(rest)
    if command == "provision":
        from assistant.llm.provision import main as provision_main

        return provision_main(rest)
    if command == "replay":
        from assistant.replay import main as replay_main

        return replay_main(rest)
    if command == "repair":
        from assistant.cli.repair import main as repair_main

        return repair_main(rest)
    if command == "bench":
        from assistant.bench.cli import main as bench_main

        return bench_main(rest)
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
        from assistant.app import run_gui

        return run_gui(rest)
    print(
        f"unknown command {command!r}; use gui, chat, chats, replay, bench, provision or "
        "repair",
        file=sys.stderr,
    )
    return 2


def _no_display() -> bool:
    import os

    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


if __name__ == "__main__":
    sys.exit(main())
