"""The controller's state of a chat, carried across a restart (issue 43): written as JSON
and read back the same; anything this code did not write is refused with a reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assistant.compaction import carry
from assistant.compaction.ahead import Precomputed, span_digests
from assistant.compaction.summary import SummaryOutcome
from assistant.conversation import Message


def _ahead(n: int, text: str = "Goal: the area function.") -> Precomputed:
    msgs = [Message(role="user" if i % 2 == 0 else "assistant", content=f"m{i}")
            for i in range(n)]
    span = span_digests(msgs)
    outcome = SummaryOutcome(text, "model", calls=2, rejected=["vague"], approach="in-context",
                             grammar=True, note="by the model")
    return Precomputed((span, n, "ctx", 171), msgs[-1].id, outcome, 3.5, span, "ctx", 171)


def _carried() -> carry.Carried:
    return carry.Carried(
        leaf="m9", anchor=(7, "ab" * 16),
        sent=carry.Sent(frozenset({"t1", "t2"}), {"t3": "cut"}, ("u4", True)),
        ahead=(_ahead(4), _ahead(2)),
    )


def test_it_reads_back_as_written_through_json() -> None:
    carried = _carried()
    value = json.loads(json.dumps(carry.to_json(carried)))
    assert carry.from_json(value) == carried
    empty = carry.Carried(leaf=None)
    assert carry.from_json(json.loads(json.dumps(carry.to_json(empty)))) == empty


def test_another_version_is_no_state() -> None:
    value = carry.to_json(_carried())
    assert carry.from_json({**value, "version": 99}) is None


@pytest.mark.parametrize("damage", [
    lambda v: "not an object",
    lambda v: {**v, "leaf": 3},
    lambda v: {**v, "anchor": [1]},
    lambda v: {**v, "anchor": ["x", "y"]},
    lambda v: {**v, "sent": {"pruned": [1], "cuts": {}, "render": None}},
    lambda v: {**v, "sent": {"pruned": [], "cuts": {"a": 1}, "render": None}},
    lambda v: {**v, "sent": {"pruned": [], "cuts": {}, "render": ["u", "yes"]}},
    lambda v: {**v, "ahead": "x"},
    lambda v: {**v, "ahead": [{**v["ahead"][0], "outcome": {"text": "x", "kind": "?"}}]},
    lambda v: {**v, "ahead": [{**v["ahead"][0], "history": 999}]},
    lambda v: {**v, "ahead": [{**v["ahead"][0], "span": [None]}]},
])
def test_a_damaged_state_is_refused_with_a_reason(damage: Any) -> None:
    value = json.loads(json.dumps(carry.to_json(_carried())))
    with pytest.raises(ValueError, match=r"\w"):
        carry.from_json(damage(value))


def test_only_summaries_still_usable_are_carried_newest_first() -> None:
    msgs = [Message(role="user" if i % 2 == 0 else "assistant", content=f"m{i}")
            for i in range(6)]
    digests = span_digests(msgs)
    old, new, stale = _ahead(2), _ahead(4), _ahead(3, "other")
    old = Precomputed(old.key, "x", old.outcome, 1.0, digests[:2], "ctx", 171)
    new = Precomputed(new.key, "y", new.outcome, 1.0, digests[:4], "ctx", 171)
    stale = Precomputed(stale.key, "z", stale.outcome, 1.0, ("0" * 24,) * 3, "ctx", 171)
    assert carry.usable_ahead([old, stale, new], digests) == [new, old]
