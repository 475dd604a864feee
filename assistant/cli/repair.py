"""``python -m assistant repair [CHAT_ID ...]``: chats with damaged lines, from a terminal.

Without an id: lists them. With ids: writes a repaired copy of each beside the original and
prints its id; exits 1 if any could not be repaired."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from assistant.service.chats import repair_copy, saved_chats
from assistant.service.values import SessionError
from assistant.textsafe import terminal_text


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="assistant repair", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument("chat_ids", nargs="*", metavar="CHAT_ID", help="chats to repair")
    args = parser.parse_args(argv)
    out = out or sys.stdout
    if not args.chat_ids:
        damaged = [row for row in saved_chats() if row.damaged]
        if not damaged:
            out.write("No chat has damaged lines.\n")
            return 0
        for row in damaged:
            out.write(f"{row.id}  {terminal_text(row.title)}\n")
            for warning in row.warnings:
                out.write(f"    {warning}\n")
        out.write("Repair one with: python -m assistant repair CHAT_ID\n")
        return 0
    status = 0
    for chat_id in args.chat_ids:
        try:
            copy = repair_copy(chat_id)
        except (OSError, SessionError) as exc:
            out.write(f"{chat_id}: not repaired: {exc}\n")
            status = 1
            continue
        out.write(
            f"{chat_id}: repaired copy {copy.chat_id} ({copy.title!r}, {copy.messages} messages); "
            f"the original is kept as it was.\n"
        )
    return status
