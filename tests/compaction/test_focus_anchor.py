"""The focus window beside recall's excerpts keeps its start for several turns, so the
engine's prompt cache holds the history shown (context_render.sticky_focus_start, the
controller's anchor per chat)."""

from __future__ import annotations

import json
from typing import Any

from assistant.compaction import carry
from assistant.compaction.context_render import (
    FOCUS_TOKENS,
    focus_bounds,
    focus_history,
    sticky_focus_start,
)
from assistant.compaction.controller import ContextController
from assistant.compaction.request import CallRequest, PreparedRequest
from assistant.conversation import CompactionReason, Conversation, Message
from tests.compaction.test_recall import SYSTEM, _controller, _long_chat

RESTART, CEILING = focus_bounds(FOCUS_TOKENS)


def _count(msg: dict[str, Any]) -> int:
    return len(str(msg["content"])) // 4 + 4


def _turns(n: int) -> list[dict[str, Any]]:
    """System prompt, then ``n`` exchanges of about 30 tokens each, then a question."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for i in range(n):
        msgs.append({"role": "user", "content": f"Question {i}: " + "word " * 20})
        msgs.append({"role": "assistant", "content": f"Answer {i}: " + "text " * 20})
    msgs.append({"role": "user", "content": "And the latest question?"})
    return msgs


def test_the_start_holds_under_the_ceiling_and_restarts_at_the_restart_when_over() -> None:
    assert RESTART < FOCUS_TOKENS < CEILING
    msgs = _turns(20)

    def start(anchor: int | None) -> int:
        return sticky_focus_start(msgs, first=1, tokens=FOCUS_TOKENS, count=_count,
                                  anchor=anchor)

    def shown(at: int) -> int:
        out = focus_history(msgs, first=1, tokens=FOCUS_TOKENS, count=_count, start=at)
        return sum(map(_count, out[1:-1]))

    # Without an anchor the window is the newest history within FOCUS_TOKENS, as before.
    fresh = start(None)
    assert FOCUS_TOKENS - 2 * 30 < shown(fresh) <= FOCUS_TOKENS
    assert focus_history(msgs, first=1, tokens=FOCUS_TOKENS, count=_count) == focus_history(
        msgs, first=1, tokens=FOCUS_TOKENS, count=_count, start=fresh)
    # An anchor further back is kept while the history from it fits the ceiling ...
    held = fresh - 2
    assert start(held) == held and FOCUS_TOKENS < shown(held) <= CEILING
    # ... and past it the window restarts lower, to hold for several turns again.
    restarted = start(1)
    assert restarted > fresh and RESTART - 2 * 30 < shown(restarted) <= RESTART
    # An anchor out of the history (a shorter chat) is no anchor.
    assert start(len(msgs) + 3) == fresh


def test_a_start_past_the_latest_exchange_still_shows_it() -> None:
    msgs = _turns(3)
    msgs.insert(-1, {"role": "user", "content": "[Output of run_command command=ls]\na.txt"})
    out = focus_history(msgs, first=1, tokens=0, count=_count, start=len(msgs) - 2)
    assert [m["content"] for m in out] == [
        SYSTEM, msgs[5]["content"], msgs[6]["content"], msgs[7]["content"], msgs[8]["content"]]


def _ask(ctrl: ContextController, conv: Conversation, k: int) -> PreparedRequest:
    conv.append(Message(role="user", content=f"What is the crate count of shelf {k}?"))
    req = ctrl.prepare(CallRequest(conv, SYSTEM))
    assert req.recall is not None  # the notes were compacted away: recall brings them back
    return req


def _answer(conv: Conversation, k: int) -> None:
    """A reply too long to be left out as a one-line answer: the history grows."""
    conv.append(Message(role="assistant", content=f"Shelf {k} holds {k * 7} crates, as note "
                                                   f"{k} of notes.txt says; the count was "
                                                   "taken last week."))


def _history_tokens(ctrl: ContextController, req: PreparedRequest) -> int:
    return sum(ctrl.counter.segment_of(m) for m in req.messages[1:-1])


def _evaluated(ctrl: ContextController, before: PreparedRequest, after: PreparedRequest) -> int:
    """Tokens of ``after``'s prompt past the prefix it shares with ``before``'s: what a
    prompt cache holding ``before`` evaluates."""
    old = ctrl.counter.encode(before.messages).tokens
    new = ctrl.counter.encode(after.messages).tokens
    assert old is not None and new is not None
    same = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
                min(len(old), len(new)))
    return len(new) - same


def _focused(window: bool = True) -> tuple[ContextController, Conversation]:
    ctrl, _ = _controller()
    ctrl.focus_tokens = lambda: FOCUS_TOKENS if window else None
    return ctrl, _long_chat(ctrl)


def test_consecutive_prompts_share_the_history_until_it_passes_the_ceiling() -> None:
    ctrl, conv = _focused()
    reqs: list[PreparedRequest] = []
    for k in range(1, 11):
        reqs.append(_ask(ctrl, conv, k))
        _answer(conv, k)
    starts = [r.messages[1] for r in reqs]
    sizes = [_history_tokens(ctrl, r) for r in reqs]
    jumps = [i for i in range(1, len(reqs)) if starts[i] != starts[i - 1]]
    assert jumps and len(jumps) <= 3  # the start moved a few times in ten turns, not each one
    for i in range(1, len(reqs)):
        assert sizes[i] <= CEILING
        if i in jumps:  # restarted: the window is small again
            assert sizes[i] <= RESTART < sizes[i - 1]
            continue
        # Held: this prompt is the last one's without its question's excerpts, plus the
        # reply and the new question; the cache holds everything before.
        assert reqs[i].messages[:len(reqs[i - 1].messages) - 1] == reqs[i - 1].messages[:-1]
        new = reqs[i].messages[len(reqs[i - 1].messages) - 1:]
        assert _evaluated(ctrl, reqs[i - 1], reqs[i]) <= sum(
            ctrl.counter.segment_of(m) for m in new) + 8
    # The window averages about FOCUS_TOKENS, as the moving one did.
    assert RESTART + 30 <= sum(sizes) / len(sizes) <= FOCUS_TOKENS


def test_the_held_start_evaluates_fewer_tokens_than_a_window_moved_every_turn() -> None:
    def evaluated(moving: bool) -> int:
        ctrl, conv = _focused()
        total, last = 0, None
        for k in range(1, 11):
            if moving:
                ctrl._memo.anchors.clear()  # the window of FOCUS_TOKENS moved every turn
            req = _ask(ctrl, conv, k)
            if last is not None:
                total += _evaluated(ctrl, last, req)
            last = req
            _answer(conv, k)
        return total

    held, moving = evaluated(False), evaluated(True)
    assert held < moving * 2 // 3  # 1,466 against 2,631 tokens when written


def test_a_compaction_restarts_the_window_even_when_its_start_is_kept() -> None:
    ctrl, conv = _focused()
    for k in range(1, 4):
        before = _ask(ctrl, conv, k)
        _answer(conv, k)
    start = before.messages[1]
    assert _history_tokens(ctrl, before) > FOCUS_TOKENS  # held past a fresh window
    conv.append(Message(role="user", content="What is the crate count of shelf 4?"))
    assert ctrl.compact(CallRequest(conv, SYSTEM), CompactionReason.MANUAL) is not None
    kept = [m.content for m in ctrl.facts.of(conv).kept]
    assert start["content"] in kept  # the old start is still in the chat ...
    after = ctrl.prepare(CallRequest(conv, SYSTEM))
    assert after.recall is not None
    assert after.messages[1] != start  # ... but the window starts afresh
    assert _history_tokens(ctrl, after) <= FOCUS_TOKENS


def test_another_chat_or_branch_has_its_own_start() -> None:
    ctrl, conv = _focused()
    for k in range(1, 4):
        held = _ask(ctrl, conv, k)
        _answer(conv, k)
    branch = Conversation(messages=list(conv.messages), compactions=list(conv.compactions))
    fresh = _ask(ctrl, branch, 4)
    assert _history_tokens(ctrl, held) > FOCUS_TOKENS >= _history_tokens(ctrl, fresh)


def test_after_a_restart_the_held_window_is_the_one_before_quitting() -> None:
    """Issue 43: the anchor is carried with the chat (:mod:`assistant.compaction.carry`), so
    the first prompt after a restart is the one the chat's saved model state holds."""
    ctrl, conv = _focused()
    for k in range(1, 4):
        held = _ask(ctrl, conv, k)
        _answer(conv, k)
    assert _history_tokens(ctrl, held) > FOCUS_TOKENS  # held past a fresh window
    saved = json.loads(json.dumps(carry.to_json(ctrl.carry_out(conv))))
    reread = conv.model_copy(deep=True)  # the chat file read again: another object

    def restarted(carried: bool) -> PreparedRequest:
        again, _ = _controller()
        again.focus_tokens = ctrl.focus_tokens
        chat = reread.model_copy(deep=True)
        if carried:
            state = carry.from_json(saved)
            assert state is not None
            again.carry_in(chat, state)
        return _ask(again, chat, 4)

    before_quitting = _ask(ctrl, conv, 4)
    assert restarted(True).messages == before_quitting.messages
    assert restarted(False).messages != before_quitting.messages  # what a restart lost
