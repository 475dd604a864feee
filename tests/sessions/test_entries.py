"""The entry lines of a chat file: an entry that stores a message or a compaction record
carries that item's id, and a line where the two differ is refused with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.sessions.entries import CompactionEntry, MessageEntry, parse_entry

MESSAGE = {"id": "m1", "role": "user", "content": "hello"}
RECORD = {
    "id": "c1", "summary": "s", "first_kept_id": None, "tokens_before": 10, "tokens_after": 4,
    "reason": "manual", "count": 1,
}


def _line(kind: str, entry_id: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parent_id": None, "timestamp": 1.0, **fields}


def test_entries_under_their_items_id_are_read() -> None:
    assert isinstance(parse_entry(_line("message", "m1", message=MESSAGE)), MessageEntry)
    assert isinstance(parse_entry(_line("compaction", "c1", record=RECORD)), CompactionEntry)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (_line("message", "x", message=MESSAGE), "a message entry's id must be the message's id"),
        (
            _line("compaction", "x", record=RECORD),
            "a compaction entry's id must be the record's id",
        ),
    ],
)
def test_an_entry_whose_id_is_not_its_items_is_refused(line: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_entry(line)


def test_other_entries_have_no_item_id_to_match() -> None:
    entry = parse_entry(_line("prune", "p1", message_ids=["m1"]))
    assert entry.type == "prune"
