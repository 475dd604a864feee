"""Power loss at any moment of the chat store's work (issue 28, item 5).

A workload of appends, a compaction, a torn tail moved aside on reopening and a repair runs
against a real folder while every file operation is recorded (``crashfs``). At each point of
the record, the states a power loss could leave are built, in which unsynced writes and
name changes are dropped, kept, or kept in part and out of order, with writes cut short,
and each is opened with the store: every chat created must open and every acknowledged
entry (an append that returned) must be there.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from assistant.atomicfile import write_atomically
from assistant.conversation import CompactionRecord, Message
from assistant.sessions import SessionStore
from assistant.sessions.handle import ChatHandle

from .chatdata import fill_chat
from .crashfs import DiskModel, Recorder, materialize

#: Random states per crash point, on top of "all pending lost" and "all pending done".
RANDOM_STATES = 2
#: At most this many crash points are opened (evenly spread over the record).
MOST_POINTS = 220


def _acknowledge(rec: Recorder, chat: ChatHandle, since: int) -> int:
    """Mark the entries appended since ``since`` as acknowledged; the new count."""
    entries = chat.entries
    for entry in entries[since:]:
        rec.mark("entry", chat.chat_id, entry.id)
    return len(entries)


def _workload(rec: Recorder, store: SessionStore) -> None:
    with store.create(title="crash me") as chat:
        rec.mark("chat", chat.chat_id)
        seen = 0
        conv = chat.conversation
        for turn in range(3):
            conv.append(Message(role="user", content=f"question {turn}"))
            seen = _acknowledge(rec, chat, seen)
            conv.append(Message(role="assistant", content=f"answer {turn} " * 40))
            seen = _acknowledge(rec, chat, seen)
        conv.add_compaction(CompactionRecord(
            summary="## Goal\nAnswer three questions.", first_kept_id=conv.messages[-1].id,
            tokens_before=500, tokens_after=100, reason="threshold", count=1,
        ))
        seen = _acknowledge(rec, chat, seen)
        chat.record_setting("mode", "standard")
        _acknowledge(rec, chat, seen)
        chat_id, path = chat.chat_id, chat.path
    # the app stopped while writing a line: reopening moves the torn tail aside, goes on
    torn = b'{"id":"torn","parent_id":"x","times'
    with path.open("ab") as fh:
        fh.write(torn)
    with store.open(chat_id) as chat:
        rec.mark("torn", chat_id, torn)  # said moved aside: kept in <chat>.jsonl.corrupt
        seen = len(chat.entries)
        chat.conversation.append(Message(role="user", content="after the torn line"))
        seen = _acknowledge(rec, chat, seen)
        chat.conversation.append(Message(role="assistant", content="still here"))
        _acknowledge(rec, chat, seen)

    with store.create(title="to repair") as other:
        rec.mark("chat", other.chat_id)
        fill_chat(other.conversation)
        _acknowledge(rec, other, 0)
        other_id, other_path, victim = other.chat_id, other.path, other.entries[4].id
    lines = other_path.read_bytes().split(b"\n")
    damaged = next(n for n, line in enumerate(lines) if victim.encode() in line)
    lines[damaged] = b"#" + lines[damaged][1:]  # a flipped byte: the line is lost
    rec.mark("lost", other_id, victim)  # from now on it may be gone
    write_atomically(other_path, b"\n".join(lines))  # (the damage itself is not under test)
    copy_id = store.repair(other_id)
    rec.mark("copy", copy_id, other_id)


def _expected(marks: list[tuple[object, ...]]) -> dict[str, set[str]]:
    """Chat id -> the entry ids that must be there, from the marks made so far."""
    chats: dict[str, set[str]] = {}
    for mark in marks:
        kind = mark[0]
        if kind == "torn":
            continue
        if kind == "chat":
            chats[str(mark[1])] = set()
        elif kind == "entry":
            chats[str(mark[1])].add(str(mark[2]))
        elif kind == "lost":
            chats[str(mark[1])].discard(str(mark[2]))
        elif kind == "copy":
            chats[str(mark[1])] = set(chats[str(mark[2])])
    return chats


def test_no_power_loss_state_loses_an_acknowledged_entry_or_a_chat() -> None:
    rng = random.Random(28)
    stats: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "home"
        root.mkdir()
        rec = Recorder(root)
        with rec.recording():
            store = SessionStore(root / "chats")
            _workload(rec, store)
            store.close_all()
        points = [k for k, op in enumerate(rec.ops) if op[0] != "mark"] + [len(rec.ops)]
        step = max(1, len(points) // MOST_POINTS)
        chosen = set(points[::step]) | {len(rec.ops)}
        model = DiskModel(rec.root)
        scratch = Path(tmp) / "state"
        for k in range(len(rec.ops) + 1):
            if k in chosen:
                expected = _expected(model.marks)
                torn = [(str(m[1]), bytes(m[2])) for m in model.marks if m[0] == "torn"]
                for kind, state in model.states(rng, RANDOM_STATES):
                    shutil.rmtree(scratch, ignore_errors=True)
                    scratch.mkdir()
                    materialize(state, scratch)
                    for chat_id, data in torn:  # the bytes a torn line held are kept
                        kept = b"".join(
                            p.read_bytes() for p in (scratch / "chats").glob(f"{chat_id}.jsonl*")
                        )
                        assert data in kept, f"point {k} ({kind}): the torn line is lost"
                        stats["torn lines kept"] += 1
                    _check(scratch / "chats", expected, f"point {k} ({kind})", stats)
                    stats["states"] += 1
            if k < len(rec.ops):
                model.apply(rec.ops[k])
    print(f"\n{len(rec.ops)} recorded operations, {len(chosen)} crash points: {dict(stats)}")
    assert stats["acknowledged entries checked"] > 1000
    assert stats["states"] >= 3 * len(chosen)


def _check(root: Path, expected: dict[str, set[str]], where: str, stats: Counter[str]) -> None:
    store = SessionStore(root)
    try:
        for chat_id, ids in expected.items():
            handle = store.open(chat_id)  # raises if the chat is gone or unreadable
            with handle:
                missing = ids - {e.id for e in handle.entries}
                assert not missing, f"{where}: chat {chat_id} lost {sorted(missing)}"
                stats["acknowledged entries checked"] += len(ids)
                stats["chats opened"] += 1
                if handle.read_only:
                    stats["opened read-only (damaged lines)"] += 1
    finally:
        store.close_all()
