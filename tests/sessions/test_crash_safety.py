"""Crash safety: torn last lines, damaged files, and a writer killed mid-write."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assistant.conversation import Message
from assistant.sessions import (
    ChatCorruptError,
    ChatLoadError,
    ChatReadOnlyError,
    ChatVersionError,
    SessionError,
    SessionStore,
)
from assistant.sessions.reader import read_chat_file

from .chatdata import fill_chat


def _sample_file(store: SessionStore) -> tuple[str, bytes, list[str]]:
    with store.create(title="sample") as chat:
        fill_chat(chat.conversation)
        chat.record_setting("mode", "local")
        ids = [e.id for e in chat.entries]
        return chat.chat_id, chat.path.read_bytes(), ids


def test_every_truncation_point_keeps_all_complete_entries(store: SessionStore) -> None:
    chat_id, data, ids = _sample_file(store)
    path = store.path_of(chat_id)
    header_end = data.index(b"\n")
    line_ends = [i for i, b in enumerate(data) if b == ord("\n")][1:]  # after each entry
    step = max(1, len(data) // 300)
    offsets = sorted(
        {
            *range(header_end + 1, len(data) + 1, step),
            *line_ends,
            *(e + 1 for e in line_ends),
            *(e - 1 for e in line_ends),
        }
    )
    for cut in offsets:
        path.write_bytes(data[:cut])
        chat = read_chat_file(path)
        complete = sum(1 for end in line_ends if end <= cut)  # newline may be missing
        assert [e.id for e in chat.entries] == ids[:complete], cut
        at_boundary = cut == header_end + 1 or any(cut in (end, end + 1) for end in line_ends)
        assert (chat.torn is None) == at_boundary, cut
        assert chat.needs_newline == (cut in line_ends)


def test_open_moves_a_torn_tail_aside_and_keeps_writing(store: SessionStore) -> None:
    chat_id, data, ids = _sample_file(store)
    path = store.path_of(chat_id)
    torn = b'{"id":"zz","parent_id":"' + ids[-1].encode() + b'","timest'
    path.write_bytes(data + torn)
    row = store.list_chats()[0]
    assert row.error is None and "incomplete" in row.warnings[0]  # listing changes nothing
    assert path.read_bytes() == data + torn

    with store.open(chat_id) as chat:
        assert len(chat.warnings) == 1
        assert "moved to" in chat.warnings[0] and ".corrupt" in chat.warnings[0]
        assert [e.id for e in chat.entries] == ids
        chat.conversation.append(Message(role="user", content="after the crash"))
    aside = path.with_name(path.name + ".corrupt")
    assert aside.read_bytes() == torn + b"\n"
    assert path.read_bytes().startswith(data)
    with store.open(chat_id) as chat:
        assert chat.warnings == []
        assert chat.conversation.messages[-1].content == "after the crash"


def test_complete_last_entry_missing_its_newline_is_kept(store: SessionStore) -> None:
    chat_id, data, ids = _sample_file(store)
    path = store.path_of(chat_id)
    path.write_bytes(data[:-1])
    with store.open(chat_id) as chat:
        assert chat.warnings == []
        assert [e.id for e in chat.entries] == ids
        chat.conversation.append(Message(role="user", content="next"))
    with store.open(chat_id) as chat:
        assert [e.id for e in chat.entries][:-1] == ids


def _write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_files_that_are_not_chats_give_clear_errors_and_other_chats_still_load(
    store: SessionStore,
) -> None:
    good_id, data, _ = _sample_file(store)
    lines = data.decode().splitlines()
    root = store.root
    cases: dict[str, tuple[type[ChatLoadError], str]] = {}

    def broken(name: str, content: list[str] | bytes, kind: type[ChatLoadError], text: str) -> None:
        path = root / f"{name}.jsonl"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            _write_lines(path, content)
        cases[name] = (kind, text)

    header = json.loads(lines[0]) | {"schema_version": 99}
    broken("newer", [json.dumps(header), *lines[1:]], ChatVersionError, "newer version")
    broken("notjson", b"\x89PNG\r\n\x1a\n\x00\x00binary", ChatCorruptError, "not JSON")
    broken("empty", b"", ChatCorruptError, "empty")
    broken("list", ["[1, 2, 3]"], ChatCorruptError, "not a chat header")
    broken("deep", ["[" * 5000 + "]" * 5000], ChatCorruptError, "nested more than 64 levels")

    rows = {r.id: r for r in store.list_chats()}
    assert rows[good_id].error is None and rows[good_id].message_count == 10
    for name, (kind, text) in cases.items():
        error = rows[name].error
        assert error is not None and text in error, name
        assert name in error  # the message names the file
        with pytest.raises(kind, match=text):
            store.open(name)
        # a failed open releases the lock
        with pytest.raises(kind):
            store.open(name)
    with store.open(good_id) as chat:
        assert len(chat.conversation.messages) == 10


def test_damaged_lines_open_read_only_with_every_readable_entry(store: SessionStore) -> None:
    """One bad line no longer makes the whole chat unopenable: the rest is shown, the damaged
    lines are named, nothing is written, and a repaired copy can be made."""
    good_id, data, ids = _sample_file(store)
    lines = data.decode().splitlines()
    root = store.root
    deep = json.loads(lines[4]) | {"type": "setting", "name": "x", "value": None}
    deep_line = json.dumps(deep).replace('"value": null', '"value": ' + "[" * 500 + "]" * 500)
    unknown = json.loads(lines[3]) | {"type": "hologram", "id": "u1"}
    orphan = json.loads(lines[2]) | {"parent_id": "nowhere"}
    cases: dict[str, tuple[list[str] | bytes, str]] = {
        # name: (content, words naming the damage); every original entry stays readable
        "badline": ([*lines[:3], '{"id": "x", "parent_id": nul', *lines[3:]], "line 4"),
        "unknown": ([*lines, json.dumps(unknown)], "unknown entry type"),
        "orphan": ([*lines[:2], json.dumps(orphan), *lines[3:]], "damaged line"),
        "dupe": ([*lines, lines[-1]], "a copy of line"),
        "bom": ([lines[0], "\ufeff" + lines[1], *lines[2:]], ""),
        "deep": ([*lines[:5], deep_line, *lines[5:]], "nested more than 64 levels"),
        "badutf8": (
            b"\n".join(
                [
                    *(ln.encode() for ln in lines[:2]),
                    b"\xff\xfe",
                    *(ln.encode() for ln in lines[2:]),
                ]
            )
            + b"\n",
            "not valid UTF-8",
        ),
        "header": ([lines[0][:-3], *lines[1:]], "line 1"),
    }
    for name, (content, _words) in cases.items():
        path = root / f"{name}.jsonl"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            _write_lines(path, [ln.replace(good_id, name) for ln in content])

    rows = {r.id: r for r in store.list_chats()}
    for name, (_content, words) in cases.items():
        path = root / f"{name}.jsonl"
        before = path.read_bytes()
        row = rows[name]
        assert row.error is None, name
        if name == "bom":  # read without the mark: not damage
            assert not row.damaged
            assert "byte-order mark" in row.warnings[0]
            continue
        assert row.damaged and words in " ".join(row.warnings), (name, row.warnings)
        with store.open(name) as chat:
            assert chat.read_only is not None
            assert [e.id for e in chat.entries] == ids, name
            assert len(chat.conversation.messages) == 10
            assert any(words in w for w in chat.warnings), name
            with pytest.raises(ChatReadOnlyError, match="read-only"):
                chat.conversation.append(Message(role="user", content="lost?"))
            assert len(chat.conversation.messages) == 10
        assert path.read_bytes() == before  # opening changed nothing

        copy_id = store.repair(name)
        assert path.read_bytes() == before  # the original is kept
        with store.open(copy_id) as copy:
            assert copy.read_only is None and copy.warnings == []
            assert copy.title.endswith("(repaired)")
            assert [m.content for m in copy.conversation.messages] == [
                m.content for m in chat.conversation.messages
            ]
            copy.conversation.append(Message(role="user", content="continued"))
        with store.open(copy_id) as copy:
            assert copy.conversation.messages[-1].content == "continued"
    with pytest.raises(SessionError, match="nothing to repair"):
        store.repair(good_id)


#: Imports once, then forks one writer per request ("<iteration> <first index>" on stdin),
#: so each kill round costs a fork, not an interpreter start. Writers report "ready <pid>",
#: then the index of every message once its append returned (it is on disk); the server
#: says "done" after the writer died, so every acknowledgement is read before it.
WRITER_SERVER = r"""
import os, random, sys
from pathlib import Path
from assistant.conversation import Message
from assistant.sessions import SessionStore

root, chat_id = Path(sys.argv[1]), sys.argv[2]
for command in sys.stdin:
    seed, first = (int(x) for x in command.split())
    pid = os.fork()
    if pid == 0:
        rng = random.Random(seed)
        chat = SessionStore(root).open(chat_id)
        os.write(1, f"ready {os.getpid()}\n".encode())
        i = first
        while True:
            size = rng.choice([1, 50, 2_000, 40_000, 400_000])
            text = f"{i}:" + "x" * size
            chat.conversation.append(Message(id=f"m{i:06d}", role="user", content=text))
            os.write(1, f"{i}\n".encode())
            i += 1
    os.waitpid(pid, 0)
    os.write(1, b"done\n")
"""


@pytest.mark.slow
def test_killed_writer_loses_at_most_the_entry_being_written(
    store: SessionStore, tmp_path: Path
) -> None:
    rng = random.Random(1234)
    with store.create() as chat:
        chat_id = chat.chat_id
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    script = tmp_path / "writer.py"
    script.write_text(WRITER_SERVER, encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, str(script), str(store.root), chat_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    count = 0  # messages in the chat after the previous round
    torn_seen = 0
    child: int | None = None
    started = time.monotonic()
    try:
        for iteration in range(30):
            server.stdin.write(f"{iteration} {count}\n".encode())
            server.stdin.flush()
            ready = server.stdout.readline().split()
            assert ready[0] == b"ready", ready
            acked: list[int] = []
            for _ in range(rng.randint(0, 4)):
                acked.append(int(server.stdout.readline()))
            child = int(ready[1])
            time.sleep(rng.uniform(0, 0.015))
            os.kill(child, signal.SIGKILL)
            while (line := server.stdout.readline().strip()) != b"done":
                acked.append(int(line))
            child = None
            last_acked = max([count - 1, *acked])

            with store.open(chat_id) as chat:
                messages = chat.conversation.messages
                torn = [w for w in chat.warnings if "incomplete" in w]
            # no gaps, nothing acknowledged lost, at most the unacknowledged one kept
            assert [m.id for m in messages] == [f"m{i:06d}" for i in range(len(messages))]
            assert last_acked + 1 <= len(messages) <= last_acked + 2, (iteration, last_acked)
            for msg in messages[count:]:
                head, _, rest = msg.content.partition(":")
                assert head == str(int(msg.id[1:])) and rest == "x" * len(rest)
            torn_seen += bool(torn)
            count = len(messages)
    finally:
        if child is not None:  # a failed round: end the writer this test started
            os.kill(child, signal.SIGKILL)
        server.stdin.close()
        server.wait(timeout=10)
        server.stdout.close()
    assert count > 0
    assert time.monotonic() - started < 60
    print(f"torn tails seen and repaired: {torn_seen}/30")


def test_append_is_fsynced_before_it_returns(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = store.create()
    synced: list[bytes] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        real_fsync(fd)
        synced.append(chat.path.read_bytes())

    monkeypatch.setattr("assistant.sessions.journal.os.fsync", recording_fsync)
    msg = chat.conversation.append(Message(role="user", content="durable"))
    assert synced and msg.id.encode() in synced[-1] and synced[-1].endswith(b"\n")
    chat.close()


def test_a_failed_write_leaves_no_half_line_and_aborts_the_change(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = store.create()
    chat.conversation.append(Message(role="user", content="before"))
    size = chat.path.stat().st_size
    real_write = os.write

    def disk_full(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("assistant.sessions.journal.os.write", disk_full)
    with pytest.raises(OSError, match="No space"):
        chat.conversation.append(Message(role="assistant", content="x" * 1000))
    assert len(chat.conversation.messages) == 1
    assert chat.path.stat().st_size == size
    monkeypatch.undo()
    chat.conversation.append(Message(role="assistant", content="after"))
    chat.close()
    with store.open(chat.chat_id) as again:
        assert [m.content for m in again.conversation.messages] == ["before", "after"]
        assert again.warnings == []


def test_header_without_newline_still_accepts_entries(store: SessionStore) -> None:
    with store.create(title="t") as chat:
        chat_id = chat.chat_id
    path = store.path_of(chat_id)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    with store.open(chat_id) as chat:
        chat.conversation.append(Message(role="user", content="hello"))
    with store.open(chat_id) as chat:
        assert [m.content for m in chat.conversation.messages] == ["hello"]


def test_a_complete_but_deeply_nested_last_line_is_damage_not_a_torn_tail(
    store: SessionStore,
) -> None:
    chat_id, data, ids = _sample_file(store)
    path = store.path_of(chat_id)
    deep = b'{"id":"d","parent_id":null,"timestamp":1,"type":"setting","name":"x","value":'
    path.write_bytes(data + deep + b"[" * 990 + b"]" * 990 + b"}\n")
    chat = read_chat_file(path)
    assert chat.torn is None
    assert [(d.line, d.reason) for d in chat.damaged] == [
        (len(ids) + 2, "the line is nested more than 64 levels deep")
    ]
    assert [e.id for e in chat.entries] == ids
    rows = store.list_chats()
    assert rows[0].damaged and "nested more than 64 levels" in rows[0].warnings[0]
    assert not path.with_name(path.name + ".corrupt").exists()
