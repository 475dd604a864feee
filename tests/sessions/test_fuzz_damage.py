"""1,000 damaged chat files: no crash anywhere, and no entry whose line survived is out of
reach (issue 18, item 4).

Each file is a real chat (branches, a prune, a compaction, a branch summary, settings)
damaged 1-3 times the way files get damaged: a flipped byte, a duplicated line, a
byte-order mark, a cut line, a junk or deeply nested line, lines swapped, a torn tail. Every
original line that is still intact must be readable in the opened chat; the chat list, open,
export and repair must never raise anything but a typed, readable error.

Every damaged chat is repaired, and the copy must continue on the branch that was active
(issue 28, item 7): the messages of that branch that can still be read, in order. The chat
has checkouts and a title entry, so a lost checkout line or a moved last line is tried too.
Only a checkout whose target is gone from the file (no line names it any more) leaves the
active branch unknowable; those are counted apart.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from assistant.conversation import Message
from assistant.sessions import ChatLoadError, SessionStore
from assistant.sessions.entries import CheckoutEntry, parse_entry
from assistant.sessions.reader import BOM
from assistant.sessions.tree import ChatTree

from .chatdata import fill_chat

pytestmark = pytest.mark.slow

FILES = 1_000
CHAT_ID = "fuzzchat"


def _chat_lines(store: SessionStore) -> list[bytes]:
    with store.create(title="Fuzz me") as chat:
        fill_chat(chat.conversation)
        user = chat.conversation.messages[-2]
        chat.edit_user_message(user.id, "Actually, one more thing")
        sure = chat.conversation.append(Message(role="assistant", content="Sure."))
        other = chat.branch_target(chat.conversation.messages[-2].id, -1)
        chat.switch_to(other)  # summary + checkout
        chat.record_setting("mode", "standard")
        back = chat.conversation.append(Message(role="user", content="Back on the first branch."))
        chat.rename("Fuzz me, renamed")
        chat.switch_to(sure.id, summarize=False)  # checkouts: a look at the other branch
        chat.switch_to(back.id, summarize=False)  # and back
        chat.conversation.append(Message(role="user", content="And once more."))
        data = chat.path.read_bytes()
        chat_id = chat.chat_id
    store.delete(chat_id)
    return data.replace(chat_id.encode(), CHAT_ID.encode()).split(b"\n")[:-1]


def _damage(lines: list[bytes], rng: random.Random) -> tuple[list[bytes], bool, str]:
    """Damaged lines, whether the file ends with a newline, and what was done."""
    out = list(lines)
    newline = True
    done = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(
            ["flip", "flip", "dup", "bom", "cut", "junk", "deep", "swap", "torn", "unknown"]
        )
        done.append(kind)
        i = rng.randrange(len(out))
        if kind == "flip":
            line = bytearray(out[i])
            if not line:
                continue
            pos = rng.randrange(len(line))
            if i == 0 and b'"schema_version":1' in out[0]:
                version = out[0].index(b'"schema_version":1') + len(b'"schema_version":')
                if pos == version:  # a valid newer version is refused, rightly: not damage
                    pos = max(0, pos - 1)
            line[pos] = rng.randrange(256)
            pieces = bytes(line).split(b"\n")  # a flipped-in newline splits the line
            out[i : i + 1] = pieces
        elif kind == "dup":
            out.insert(i, out[i])
        elif kind == "bom":
            out[i] = BOM + out[i]
        elif kind == "cut":
            line = out[i]
            a = rng.randrange(len(line) + 1)
            b = min(len(line), a + rng.randint(1, 30))
            out[i] = line[:a] + line[b:]
        elif kind == "junk":
            out.insert(
                i, bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))).replace(b"\n", b" ")
            )
        elif kind == "deep":
            depth = rng.choice([65, 300, 1_000, 5_000])
            out.insert(i, b'{"id":"deep","value":' + b"[" * depth + b"]" * depth + b"}")
        elif kind == "swap" and len(out) > 2:
            j = rng.randrange(1, len(out))
            out[i], out[j] = out[j], out[i]
        elif kind == "torn":
            last = out[-1]
            out[-1] = last[: rng.randrange(len(last) + 1)]
            newline = False
        elif kind == "unknown":
            out.insert(i, b'{"id":"u%d","parent_id":null,"timestamp":1,"type":"hologram"}' % i)
    return out, newline, "+".join(done)


def _target_lost(
    checkouts: list[tuple[bytes, str, str]], lines: list[bytes], complete: set[bytes]
) -> bool:
    """A checkout on the active branch was damaged and no line still names where it went
    (its id and a piece of its target's): the active branch cannot be known."""
    for line, own, target in checkouts:
        if line in complete or BOM + line in complete:
            continue
        mine = [x for x in lines if own[:8].encode() in x or own[-8:].encode() in x]
        if not any(target[:4].encode() in x or target[-4:].encode() in x for x in mine):
            return True
    return False


def test_a_thousand_damaged_chats_never_crash_and_keep_every_intact_entry() -> None:
    rng = random.Random(18)
    stats: Counter[str] = Counter()
    others: list[tuple[int, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp))
        original = _chat_lines(store)
        ids = {line: json.loads(line)["id"] for line in original[1:]}
        tree = ChatTree(parse_entry(json.loads(line)) for line in original[1:])
        active = [m.id for m in tree.build(tree.last_id).messages]
        known = set(ids.values())
        line_of = {v: k for k, v in ids.items()}
        checkouts = [(line_of[e.id], e.id, e.parent_id or "") for e in tree.path(tree.last_id)
                     if isinstance(e, CheckoutEntry)]
        path = store.path_of(CHAT_ID)
        for n in range(FILES):
            lines, newline, done = _damage(original, rng)
            content = b"\n".join(lines) + (b"\n" if newline else b"")
            path.write_bytes(content)
            complete = set(lines if newline else lines[:-1])
            intact = {ids[line] for line in original[1:] if line in complete}
            intact |= {ids[line] for line in original[1:] if BOM + line in complete}

            rows = [r for r in store.list_chats() if r.id == CHAT_ID]
            assert len(rows) == 1, done
            try:
                handle = store.open(CHAT_ID)
            except ChatLoadError as exc:
                # Only a file whose lines hold no entry at all is not a chat.
                assert str(exc).startswith(f"Cannot read chat {CHAT_ID}.jsonl"), done
                assert not intact, (done, str(exc))
                stats["refused (no entry readable)"] += 1
                continue
            with handle:
                reachable = {e.id for e in handle.entries}
                missing = intact - reachable
                assert not missing, (n, done, missing)
                stats["entries intact"] += len(intact)
                store.export_markdown(CHAT_ID)
                store.export_openai_json(CHAT_ID)
                stats["read-only" if handle.read_only else "writable"] += 1
                if handle.read_only:
                    assert handle.warnings and any(
                        "could not be read" in w or "damaged line" in w for w in handle.warnings
                    )
            if rows[0].damaged:
                copy_id = store.repair(CHAT_ID)
                with store.open(copy_id) as copy:
                    assert copy.read_only is None
                    assert reachable <= {e.id for e in copy.entries}
                    shown = [m.id for m in copy.conversation.messages if m.id in known]
                store.delete(copy_id)
                stats["repaired"] += 1
                # The repaired chat continues on the branch that was active: the messages
                # of that branch that could still be read, in order.
                if shown != [i for i in active if i in reachable]:
                    if _target_lost(checkouts, lines, complete):
                        stats["another branch: a checkout on it lost its target"] += 1
                    else:
                        stats["repaired on another branch"] += 1
                        others.append((n, done))
            stats["files"] += 1
            for leftover in Path(tmp).glob(f"{CHAT_ID}.jsonl.corrupt"):
                leftover.unlink()
    print(f"\n{FILES:,} damaged chats: {dict(stats)}")
    assert not others, f"{len(others)} repaired chats on another branch: {others[:20]}"
    assert stats["files"] + stats["refused (no entry readable)"] == FILES
