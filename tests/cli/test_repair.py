"""``python -m assistant repair``: damaged chats listed and repaired from a terminal
(issue 18, item 4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from assistant.conversation import Message
from assistant.sessions import SessionStore

REPO = Path(__file__).resolve().parents[2]


def _damaged_chat(store: SessionStore) -> tuple[str, bytes]:
    with store.create(title="Trip plan") as chat:
        for i in range(4):
            chat.conversation.append(Message(role="user", content=f"question {i}"))
            chat.conversation.append(Message(role="assistant", content=f"answer {i}"))
        chat_id = chat.chat_id
    path = store.path_of(chat_id)
    lines = path.read_bytes().split(b"\n")
    lines[3] = b"\x00garbage"
    data = b"\n".join(lines)
    path.write_bytes(data)
    return chat_id, data


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assistant", "repair", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_lists_then_repairs_a_damaged_chat() -> None:
    store = SessionStore()
    with store.create(title="Fine chat") as fine:
        fine.conversation.append(Message(role="user", content="hello"))
    chat_id, data = _damaged_chat(store)

    listed = _run()
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith(f"{chat_id}  Trip plan\n")
    assert "line 4 (the line is not valid JSON)" in listed.stdout
    assert fine.chat_id not in listed.stdout

    repaired = _run(chat_id)
    assert repaired.returncode == 0, repaired.stderr
    assert "repaired copy" in repaired.stdout and "'Trip plan (repaired)', 7 messages" in (
        repaired.stdout
    )
    copy_id = repaired.stdout.split("repaired copy ")[1].split()[0]
    assert store.path_of(chat_id).read_bytes() == data
    with store.open(copy_id) as copy:
        assert copy.read_only is None
        assert [m.content for m in copy.conversation.messages][-1] == "answer 3"

    again = _run(fine.chat_id, "no-such-chat")
    assert again.returncode == 1
    assert "nothing to repair" in again.stdout and "No chat 'no-such-chat'" in again.stdout
