"""A long sample chat with tool cards, a prune and a compaction (for screenshots)."""

from __future__ import annotations

from assistant.compaction.events import PruneEvent
from assistant.conversation import CompactionRecord, Message, ToolCall
from assistant.sessions.store import SessionStore

SUMMARY = """## Goal
Tidy the project notes and find every TODO in the workspace.

## Progress
### Done
- [x] Listed the workspace and read `notes.md`
- [x] Found 3 TODO items in `plan.txt`

## Next Steps
1. Group the TODOs by topic
2. Draft a short weekly plan"""

CODE_REPLY = """Here is a small script that prints the TODO lines with their file names:

```python
from pathlib import Path

for path in Path(".").rglob("*.txt"):
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if "TODO" in line:
            print(f"{path}:{number}: {line.strip()}")
```

Run it from the workspace folder. It only **reads** files, so it is safe."""


def build_sample_chat(store: SessionStore) -> tuple[str, list[str]]:
    """Create the chat; returns (chat id, ids of tool results to prune live)."""
    handle = store.create(title="Project notes and TODOs")
    conv = handle.conversation
    conv.append(Message(role="user", content="What is in my workspace?"))
    ls = ToolCall(name="list_dir", arguments={"path": "."})
    conv.append(Message(role="assistant", content="", tool_calls=[ls]))
    conv.append(
        Message(
            role="tool",
            tool_call_id=ls.id,
            name="list_dir",
            content="notes.md\nplan.txt\nscripts/\nreport-2024.pdf",
        )
    )
    conv.append(
        Message(
            role="assistant",
            content="Your workspace has `notes.md`, `plan.txt`, a `scripts/` folder and a PDF.",
        )
    )
    first_kept = Message(role="user", content="Find every TODO in the text files.")
    conv.append(first_kept)
    grep = ToolCall(name="grep", arguments={"pattern": "TODO", "path": "."})
    conv.append(Message(role="assistant", content="Let me search.", tool_calls=[grep]))
    grep_result = Message(
        role="tool",
        tool_call_id=grep.id,
        name="grep",
        content="plan.txt:3: TODO book the venue\nplan.txt:7: TODO send invites\n"
        "plan.txt:12: TODO order snacks",
    )
    conv.append(grep_result)
    conv.add_compaction(
        CompactionRecord(
            summary=SUMMARY,
            first_kept_id=first_kept.id,
            tokens_before=8912,
            tokens_after=3104,
            reason="threshold",
            count=1,
            duration_s=4.2,
        )
    )
    conv.append(
        Message(
            role="assistant",
            content="I found **3 TODO items**, all in `plan.txt`:\n\n1. Book the venue\n"
            "2. Send invites\n3. Order snacks",
        )
    )
    conv.append(Message(role="user", content="Write me a script that finds them."))
    conv.append(Message(role="assistant", content=CODE_REPLY))
    read = ToolCall(name="read_file", arguments={"path": "notes.md"})
    conv.append(Message(role="assistant", tool_calls=[read], initiated_by="user"))
    read_result = Message(
        role="tool",
        tool_call_id=read.id,
        name="read_file",
        initiated_by="user",
        content="# Notes\n- Weekly sync on Mondays\n- Budget: 400 EUR\n- Venue: town hall",
    )
    conv.append(read_result)
    conv.append(Message(role="user", content="Thanks! Summarize the notes in one line."))
    conv.append(
        Message(
            role="assistant",
            content="Weekly Monday syncs, a 400 EUR budget, and the town hall as the venue.",
        )
    )
    chat_id = handle.chat_id
    handle.close()
    return chat_id, [grep_result.id]


def prune_event(ids: list[str]) -> PruneEvent:
    return PruneEvent(message_ids=tuple(ids), tokens_freed=1240)
