"""``python -m assistant chats``: the saved chats, newest first (the same store as the
window); continue one with ``python -m assistant chat --resume ID``."""

from __future__ import annotations

import argparse
import sys

from assistant.service.chats import chat_lines, saved_chats
from assistant.service.values import SessionError
from assistant.textsafe import terminal_text

from .terminal import never_fail_to_encode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assistant chats", description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, help="show at most this many")
    args = parser.parse_args(argv)
    never_fail_to_encode()
    try:
        chats = saved_chats()
    except (OSError, SessionError) as exc:
        print(f"error: cannot list chats: {exc}", file=sys.stderr)
        return 1
    if not chats:
        print("No saved chats yet. Start one with: python -m assistant chat", file=sys.stderr)
        return 0
    for line in chat_lines(chats, args.limit):
        print(terminal_text(line))  # a title as typed: control characters shown, not obeyed
    return 0
