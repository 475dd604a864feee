"""The facts of a conversation are computed once per ``prepare`` (issue 27): each of the
functions that compute them is wrapped, and one prepare (plain, then one that compacts) is
walked; no fact is computed twice for the same input. The prompt's measure is one of them:
the chat's whole prompt is counted once per state: the one sent (and, in a prepare that
compacts, the one that passed the window)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

import pytest

from assistant.compaction import file_tracking, visibility
from assistant.compaction.facts import ConversationFacts, FactsCache
from assistant.compaction.request import CallRequest
from assistant.compaction.summary import extractive, user_text
from assistant.compaction.tokens import Memo
from assistant.compaction.view import ViewBuilder
from assistant.config import CompactionSwitches
from assistant.conversation import CompactionRecord, Conversation, Message
from tests.fakes.scripted import ScriptedBackend

from .helpers import GOOD_SUMMARY, SYSTEM, controller, local_policy, tool_turn

Computed = Counter[tuple[str, Hashable]]


def _ids(messages: Any) -> tuple[str, ...]:
    return tuple(m.id for m in messages)


#: fact -> (the function that computes it, the key of its input)
FACTS: dict[str, tuple[Callable[..., Any], Callable[..., Hashable]]] = {
    "calls_by_id": (visibility.calls_by_id, lambda msgs: _ids(msgs)),
    "unanswered_ids": (visibility.unanswered_ids, lambda msgs: _ids(msgs)),
    "pending_user_ids": (visibility.pending_user_ids, lambda msgs: _ids(msgs)),
    "extract_file_ops": (
        file_tracking.extract_file_ops, lambda msgs, prev=None: (_ids(msgs), repr(prev))
    ),
    "collect_state": (
        extractive.collect_state,
        lambda msgs, files, **kw: (_ids(msgs), repr(files), repr(sorted(kw.items()))),
    ),
    # A user message split into sentences (``split_user_text`` memoizes it): what the
    # user's rules, instructions and record are read from.
    "_split": (user_text._split, lambda text: text),
}


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> Computed:
    """Every computation of a fact, by fact and input, wherever it is called from."""
    seen: Computed = Counter()
    monkeypatch.setattr(user_text, "_SPLIT", Memo(4_096))  # nothing split before the walk
    for name, (fn, key) in FACTS.items():
        def wrapper(*args: Any, _fn: Any = fn, _key: Any = key, _name: str = name,
                    **kw: Any) -> Any:
            seen[(_name, _key(*args, **kw))] += 1
            return _fn(*args, **kw)

        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("assistant.") and \
                    getattr(mod, name, None) is fn:
                monkeypatch.setattr(mod, name, wrapper)
    original = Conversation.kept_messages

    def kept(self: Conversation) -> list[Message]:
        seen[("kept_messages", (id(self), len(self.messages), len(self.compactions)))] += 1
        return original(self)

    monkeypatch.setattr(Conversation, "kept_messages", kept)
    view = ViewBuilder._view

    def viewed(self: ViewBuilder, facts: ConversationFacts, pruned: list[Message],
               *caps: int | None) -> Any:
        seen[("view", (facts.state, _ids(pruned), caps))] += 1  # cleared notes and cuts
        return view(self, facts, pruned, *caps)

    monkeypatch.setattr(ViewBuilder, "_view", viewed)
    # What TokenCounter asks a backend for a whole prompt.
    for method, whole in (("encode_prompt", ScriptedBackend.encode_prompt),
                          ("count_prompt", ScriptedBackend.count_prompt)):
        def counted(self: ScriptedBackend, messages: Any, tools: Any = None,
                    _fn: Any = whole) -> Any:
            if len(messages) > 1 and messages[0].get("content") == SYSTEM:  # the chat's prompt
                seen[("measure", repr(messages))] += 1
            return _fn(self, messages, tools)

        monkeypatch.setattr(ScriptedBackend, method, counted)
    return seen


def _measured(computed: Computed) -> list[str]:
    """The chat prompts counted whole (to decide or to be sent), one entry a count."""
    return [key for (name, key), n in computed.items() if name == "measure" for _ in range(n)]


def _chat() -> Conversation:
    conv = Conversation()
    conv.append(Message(role="user", content="Always answer in French. Never touch setup.cfg."))
    conv.append(Message(role="assistant", content="D'accord."))
    for i in range(8):
        tool_turn(conv, i, size=60)
    conv.append(Message(role="user", content="Which file was the longest?"))
    return conv


def _repeated(computed: Computed) -> dict[tuple[str, Hashable], int]:
    return {key: n for key, n in computed.items() if n > 1}


def _policy(conv: Conversation, extra: int) -> Any:
    ctl, _, _ = controller()
    n = ctl.estimate(conv, SYSTEM)
    base = local_policy(reserve=300, keep_recent=1_000, summary_budget=400)
    return replace(base, window=n + base.reserve + extra)


def test_a_prepare_that_prunes_computes_each_fact_once(computed: Computed) -> None:
    conv = _chat()
    ctl, _be, _ = controller(policy=_policy(conv, 200))
    computed.clear()
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.pruned_tokens > 0 and req.compaction is None  # the rules ran
    names = {name for name, _ in computed}
    assert {"kept_messages", "calls_by_id", "unanswered_ids", "view"} <= names
    assert _repeated(computed) == {}
    assert _measured(computed) == [repr(req.messages)]  # only the prompt sent


@pytest.mark.parametrize("additive", [True, False])
def test_a_prepare_that_compacts_computes_each_fact_once(
    computed: Computed, additive: bool
) -> None:
    conv = _chat()
    pol = _policy(conv, -1)
    ctl, _be, _ = controller(
        ScriptedBackend([GOOD_SUMMARY]), pol, switches=lambda: CompactionSwitches(prune=False)
    )
    ctl.counter.additive = additive  # False: a template whose segments do not add up
    computed.clear()
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.compaction is not None
    names = {name for name, _ in computed}
    assert {"kept_messages", "unanswered_ids", "extract_file_ops", "collect_state",
            "_split", "view"} <= names
    assert _repeated(computed) == {}
    # Twice in all: the chat before the compaction, and after it (a new state).
    assert sum(n for (name, _), n in computed.items() if name == "kept_messages") == 2
    # The prompt that passed the window, then the prompt sent. The summary's candidate is
    # counted from its segments while they add up; else counted whole as built and as
    # rendered (the shorter is sent), each once.
    measured = _measured(computed)
    assert len(measured) == (2 if additive else 3) and repr(req.messages) in measured[1:]


def test_the_walk_finds_a_fact_computed_twice(
    computed: Computed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk can fail: with facts that are never kept, the kept messages and the calls
    are computed again by each rule."""
    monkeypatch.setattr(FactsCache, "of", lambda self, conv: ConversationFacts(conv))
    conv = _chat()
    ctl, _be, _ = controller(policy=_policy(conv, 200))
    computed.clear()
    ctl.prepare(CallRequest(conv, SYSTEM))
    assert {name for name, _ in _repeated(computed)} >= {"kept_messages", "calls_by_id"}


def test_facts_follow_the_conversation() -> None:
    conv = _chat()
    cache = FactsCache()
    facts = cache.of(conv)
    assert cache.of(conv) is facts and facts.kept == conv.messages
    assert facts.unanswered == frozenset()
    conv.mark_pruned([conv.messages[4].id], 10)  # pruning changes none of the facts
    assert cache.of(conv) is facts
    conv.append(Message(role="assistant", content="file_0.py."))
    moved = cache.of(conv)
    assert moved is not facts and moved.kept[-1].content == "file_0.py."
    conv.add_compaction(CompactionRecord(
        summary="s", first_kept_id=conv.messages[-2].id, tokens_before=1, tokens_after=1,
        reason="manual", count=1,
    ))
    after = cache.of(conv)
    assert after is not moved and [m.content for m in after.kept] == [
        "Which file was the longest?", "file_0.py."
    ]
    other = _chat()
    assert cache.of(other).conv is other

