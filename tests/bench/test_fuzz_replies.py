"""A bounded slice of the hostile-reply fuzz (issue 28): seeded cases through the parser,
the agent loop with the scripted backend, both template kinds and a save and reopen of the
chat: 0 crashes and 0 changed chats. The full run is ``python -m bench.fuzz_replies``
(10,000 cases)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench import fuzz_replies
from bench.fuzz_replies import Case, Runner, cases, make_case, run


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the bench runs it: the store's round trip without waiting for the disk."""
    monkeypatch.setattr("os.fsync", lambda _fd: None)


# The first 40 cases of the seed already make every kind and the deepest nesting; `make test`
# also runs all 120.
@pytest.mark.parametrize("count", [40, pytest.param(120, marks=pytest.mark.slow)])
def test_seeded_cases_cause_no_crash_and_change_no_chat(tmp_path: Path, count: int) -> None:
    out = run(seed=28, count=count, huge=0, home=tmp_path)
    assert out.crashes == []
    assert out.losses == []
    assert out.cases == count
    assert len(out.kinds) == 7  # every kind of case was made
    assert out.deepest >= 20_000


def test_a_100_mb_reply_and_message(tmp_path: Path) -> None:
    """The largest size of the run, once: the reply is cut at the reply limit as a model's
    would be, the message is cut for the model and kept whole in the chat."""
    size = fuzz_replies.HUGE_SIZES[-1]
    text = fuzz_replies._huge(size, random.Random(0))
    assert len(text) >= 0.99 * size
    runner = Runner(tmp_path)
    try:
        assert runner.run(Case("huge", text, user=text)) is None
    finally:
        runner.close()


def test_the_cases_are_hostile_and_reproducible() -> None:
    first = [(c.kind, c.reply, c.user) for c in cases(5, 300, 0)]
    assert first == [(c.kind, c.reply, c.user) for c in cases(5, 300, 0)]
    assert first != [(c.kind, c.reply, c.user) for c in cases(6, 300, 0)]
    made = list(cases(7, 300, 0))
    assert any("\x00" in c.reply or "\ud800" in c.reply for c in made)
    assert any(c.native_calls for c in made)
    assert any(c.reply.count("[") >= 100_000 or c.reply.count("{") >= 100_000 for c in made)
    huge = make_case(random.Random(1), 0, huge=fuzz_replies.HUGE_SIZES[0])
    assert len(huge.reply) >= fuzz_replies.HUGE_SIZES[0]
