"""Relinking a damaged chat's entries onto the branch that was active (issue 28, item 7),
case by case: what each kind of damage does to the active position and to the parents."""

from __future__ import annotations

from pathlib import Path

from assistant.conversation import Message
from assistant.sessions import SessionStore
from assistant.sessions.reader import read_chat_file
from assistant.sessions.tree import ChatTree


def _two_branches(store: SessionStore) -> tuple[Path, dict[str, str], list[bytes]]:
    """A chat: q1 a1 q2 a2, then q2b on another branch from a1, a checkout back to a2 and
    q3 there. Returns its path, the ids by name, and its lines."""
    with store.create(title="branches") as chat:
        conv = chat.conversation
        ids = {}
        for name in ("q1", "a1", "q2", "a2"):
            role = "user" if name.startswith("q") else "assistant"
            ids[name] = conv.append(Message(role=role, content=name)).id
        chat.switch_to(ids["a1"], summarize=False)
        ids["q2b"] = conv.append(Message(role="user", content="q2b")).id
        chat.switch_to(ids["a2"], summarize=False)
        ids["back"] = chat.entries[-1].id
        ids["q3"] = conv.append(Message(role="user", content="q3")).id
        path = chat.path
    return path, ids, path.read_bytes().split(b"\n")[:-1]


def _active(path: Path) -> list[str]:
    chat = read_chat_file(path)
    tree = ChatTree(chat.entries)
    return [m.content for m in tree.build(chat.leaf).messages]


def _line(lines: list[bytes], entry_id: str) -> int:
    start = b'{"id":"' + entry_id.encode()
    return next(n for n, line in enumerate(lines) if line.startswith(start))


def _write(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_an_entry_after_a_damaged_line_hangs_where_the_damaged_line_hung(
    store: SessionStore,
) -> None:
    path, ids, lines = _two_branches(store)
    assert _active(path) == ["q1", "a1", "q2", "a2", "q3"]
    n = _line(lines, ids["back"])  # the checkout back to a2: q3 hangs from it
    lines[n] = lines[n].replace(b'"type":"checkout"', b'"type":"chec\xffkout"')
    _write(path, lines)
    chat = read_chat_file(path)
    assert chat.needs_repair
    # not the entry on the line before (the other branch's q2b): the checkout's own parent
    assert _active(path) == ["q1", "a1", "q2", "a2", "q3"]


def test_an_id_changed_by_a_flipped_byte_is_still_followed(store: SessionStore) -> None:
    path, ids, lines = _two_branches(store)
    n = _line(lines, ids["back"])
    target = ids["a2"].encode()
    flipped = target[:5] + (b"x" if target[5:6] != b"x" else b"y") + target[6:]
    lines[n] = lines[n].replace(target, flipped).replace(b"checkout", b"check\xfe")
    _write(path, lines)
    assert _active(path) == ["q1", "a1", "q2", "a2", "q3"]


def test_an_id_split_by_a_flipped_byte_is_not_read_as_its_parent(store: SessionStore) -> None:
    """A byte no id has, flipped into the checkout's own id, splits it in two runs; the
    second is not the parent it names, even where another entry's id ends like it (here
    the other branch's q2b, renamed so: with random ids that happens one chat in a few
    hundred)."""
    path, ids, lines = _two_branches(store)
    back = ids["back"]
    assert len(back) == 16
    twin = ids["q2b"][:-4] + back[-4:]  # the other branch's message ends like the checkout
    data = b"\n".join(lines).replace(ids["q2b"].encode(), twin.encode())
    lines = data.split(b"\n")
    n = _line(lines, back)
    split = back[:8].encode() + b"\xa8" + back[9:].encode()
    lines[n] = lines[n].replace(back.encode(), split, 1)
    _write(path, lines)
    assert read_chat_file(path).needs_repair
    assert _active(path) == ["q1", "a1", "q2", "a2", "q3"]


def test_a_damaged_parent_line_is_followed_before_an_id_that_only_ends_alike(
    store: SessionStore,
) -> None:
    """q2 and a2 both unreadable: the way up from the checkout goes a2 -> q2 -> a1 through
    the two damaged lines, not to q2b, whose id ends in the same four characters as q2's."""
    path, ids, lines = _two_branches(store)
    twin = ids["q2b"][:-4] + ids["q2"][-4:]
    lines = b"\n".join(lines).replace(ids["q2b"].encode(), twin.encode()).split(b"\n")
    for name in ("q2", "a2"):
        n = _line(lines, ids[name])
        lines[n] = lines[n][:-20] + b"\xff"  # cut near its end: the head still reads
    _write(path, lines)
    assert _active(path) == ["q1", "a1", "q3"]


def test_a_torn_last_line_still_leads_up_from_what_hung_from_it(store: SessionStore) -> None:
    """a2's line moved to the end and torn there: the checkout back to it (above) still
    leads up through it to q2, not to q2b, the entry written just before the checkout."""
    path, ids, lines = _two_branches(store)
    n = _line(lines, ids["a2"])
    moved = lines.pop(n)
    lines.append(moved[: moved.index(b'"timestamp"') + 5])
    path.write_bytes(b"\n".join(lines))  # no newline: the last line is torn
    assert _active(path) == ["q1", "a1", "q2", "q3"]


def test_a_lost_last_line_leads_back_to_where_it_hung(store: SessionStore) -> None:
    path, ids, lines = _two_branches(store)
    lines = lines[:-1]  # q3 gone: the checkout back to a2 is the last line, and damaged
    lines[-1] = lines[-1].replace(b'"type":"checkout"', b'"type\xff:"checkout"')
    _write(path, lines)
    chat = read_chat_file(path)
    assert chat.leaf == ids["a2"]
    assert _active(path) == ["q1", "a1", "q2", "a2"]


def test_a_repaired_copy_checks_out_an_active_position_with_entries_below(
    store: SessionStore,
) -> None:
    with store.create(title="checkout") as chat:
        conv = chat.conversation
        first = conv.append(Message(role="user", content="q1")).id
        answer = conv.append(Message(role="assistant", content="a1")).id
        chat.rename("renamed")  # hangs from a1
        chat.switch_to(first, summarize=False)
        conv.append(Message(role="assistant", content="a1b"))
        chat.switch_to(answer, summarize=False)  # back to a1: the last line
        chat_id, path = chat.chat_id, chat.path
    lines = path.read_bytes().split(b"\n")[:-1]
    lines[-1] = lines[-1].replace(b'"type":"checkout"', b'"type\xff:"checkout"')
    _write(path, lines)
    chat_file = read_chat_file(path)
    assert chat_file.active == answer  # entries hang from a1: it cannot be moved last
    assert _active(path) == ["q1", "a1"]
    with store.open(chat_id) as shown:  # read-only, showing the active branch
        assert [m.content for m in shown.conversation.messages] == ["q1", "a1"]
    copy_id = store.repair(chat_id)
    with store.open(copy_id) as copy:  # the copy checks out a1, then renames itself
        assert copy.read_only is None
        assert [m.content for m in copy.conversation.messages] == ["q1", "a1"]
        assert copy.title == "renamed (repaired)"


def test_a_moved_last_line_is_found_by_its_time(store: SessionStore) -> None:
    path, ids, lines = _two_branches(store)
    last = lines.pop()  # q3 moved up before the checkouts (its parent now comes after it)
    lines.insert(_line(lines, ids["q2b"]), last)
    lines.append(b"\xff junk \xfe")  # and a damaged line at the end
    _write(path, lines)
    assert _active(path) == ["q1", "a1", "q2", "a2", "q3"]


def test_one_damaged_timestamp_does_not_move_the_active_position(store: SessionStore) -> None:
    path, ids, lines = _two_branches(store)
    n = _line(lines, ids["q2b"])  # the other branch's message claims a later time
    lines[n] = lines[n].replace(b'"timestamp":17', b'"timestamp":18', 1)
    lines.insert(n, b"\xff junk \xfe")
    _write(path, lines)
    assert _active(path) == ["q1", "a1", "q2", "a2", "q3"]


def test_an_undamaged_chat_is_read_in_file_order(store: SessionStore) -> None:
    path, _, lines = _two_branches(store)
    chat = read_chat_file(path)
    assert not chat.needs_repair and chat.active is None
    assert [e.id for e in chat.entries] == [e for e in (
        _id(line) for line in lines[1:]
    )]


def _id(line: bytes) -> str:
    return line.split(b'"', 4)[3].decode()
