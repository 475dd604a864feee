"""Fuzzing: no file content makes the loader (or the chat list) fail other than with a
typed, readable error; damaged valid files keep their intact prefix."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.sessions import ChatLoadError, SessionError, SessionStore
from assistant.sessions.reader import read_chat_file

from .chatdata import fill_chat

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_HEADER = json.dumps(
    {"type": "header", "schema_version": 1, "chat_id": "fuzz", "created": 1.0, "title": None}
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
entry_like = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["a", "b", "c", ""]) | st.text(max_size=5),
        "parent_id": st.sampled_from([None, "a", "b", "zz"]),
        "timestamp": st.floats() | st.integers() | st.text(max_size=3),
        "type": st.sampled_from(
            [
                "message",
                "prune",
                "compaction",
                "compaction_undo",
                "branch_summary",
                "checkout",
                "setting",
                "title",
                "header",
                "bogus",
            ]
        ),
    },
    optional={
        "message": st.fixed_dictionaries(
            {
                "id": st.sampled_from(["a", "b", "c"]),
                "role": st.sampled_from(["user", "tool", "x"]),
            },
            optional={"content": st.text(max_size=10), "pruned": st.booleans()},
        ),
        "message_ids": st.lists(st.text(max_size=3), max_size=3),
        "record_id": st.text(max_size=3),
        "summary": st.text(max_size=10),
        "name": st.text(max_size=5),
        "value": json_values,
        "title": st.text(max_size=10),
        "record": st.dictionaries(st.text(max_size=6), json_values, max_size=4),
    },
)
line = (
    entry_like.map(lambda d: json.dumps(d).encode())
    | json_values.map(lambda v: json.dumps(v).encode())
    | st.binary(max_size=40)
)


def _check_store(folder: Path, content: bytes) -> None:
    (folder / "fuzz.jsonl").write_bytes(content)
    try:
        chat = read_chat_file(folder / "fuzz.jsonl")
    except ChatLoadError as exc:
        assert str(exc).startswith("Cannot read chat fuzz.jsonl")
    else:
        assert all(e.id for e in chat.entries)
    store = SessionStore(folder)
    rows = store.list_chats()
    assert [r.id for r in rows] == ["fuzz"]
    try:
        with store.open("fuzz") as handle:
            assert handle.conversation is not None
            store.export_markdown("fuzz")
            store.export_openai_json("fuzz")
    except SessionError as exc:
        assert str(exc)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_never_crash(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check_store(Path(tmp), data)


@FUZZ
@given(st.lists(line, max_size=8), st.booleans())
def test_random_lines_after_a_valid_header_never_crash(lines: list[bytes], newline: bool) -> None:
    content = b"\n".join([_HEADER.encode(), *lines]) + (b"\n" if newline else b"")
    with tempfile.TemporaryDirectory() as tmp:
        _check_store(Path(tmp), content)


_VALID: bytes | None = None


def _valid_chat() -> bytes:
    global _VALID
    if _VALID is None:
        with tempfile.TemporaryDirectory() as tmp:
            store = SessionStore(Path(tmp))
            with store.create() as chat:
                fill_chat(chat.conversation)
                _VALID = chat.path.read_bytes().replace(chat.chat_id.encode(), b"fuzz")
    return _VALID


@FUZZ
@given(st.data())
def test_damaged_valid_chat_never_crashes(data: st.DataObject) -> None:
    content = bytearray(_valid_chat())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(content) - 1))
        action = data.draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        if action == "flip":
            content[pos] = data.draw(st.integers(0, 255))
        elif action == "delete":
            del content[pos : pos + data.draw(st.integers(1, 30))]
        elif action == "insert":
            content[pos:pos] = data.draw(st.binary(min_size=1, max_size=10))
        else:
            del content[pos:]
        if not content:
            content = bytearray(b"x")
    with tempfile.TemporaryDirectory() as tmp:
        _check_store(Path(tmp), bytes(content))
