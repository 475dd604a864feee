"""What the user said: facts and decisions are kept in the record ahead of chatter."""

from __future__ import annotations

import pytest

from assistant.compaction.summary.user_facts import pins_down
from assistant.compaction.summary.user_record import shorten_messages
from tests.fakes.scripted import ScriptedBackend

COUNT = ScriptedBackend().count

FACTS_AND_DECISIONS = (
    "Our staging server port is 12345.",
    "the budget is 4,200 euros",
    "In our reports we write dates in the format DD.MM.YYYY.",
    "The release date is 14 March 2027.",
    "The config lives in settings/app.toml.",
    "Our main branch is called trunk.",
    "We deploy on Fridays, right?",
    "not sure about the cache, maybe we can postpone that",
    "no, use pnpm not npm",
    "Actually, make it three retries.",
    "call it main-new",
    "Let's go with the second option.",
    "Shall we drop the old importer?",
    "ok, create a branch refactor",
    "make a new folder called drafts",
)
CHATTER = (
    "Tell me about the history of tea.",
    "What do you think about jazz?",
    "That sounds lovely.",
    "I was reading about volcanoes last weekend and found it fascinating.",
    "What are three surprising things about bees that most people do not know?",
    "My neighbour spent years on it and still says she is a beginner.",
    "open the file and read it to me",
    "add a section about costs",
)


@pytest.mark.parametrize("sentence", FACTS_AND_DECISIONS)
def test_facts_and_decisions_pin_something_down(sentence: str) -> None:
    assert pins_down(sentence)


@pytest.mark.parametrize("sentence", CHATTER)
def test_chatter_pins_nothing_down(sentence: str) -> None:
    assert not pins_down(sentence)


def _chat() -> list[str]:
    chatter = [
        f"I was reading about {topic} last weekend. Tell me about {topic}, what do you think "
        f"of it? That sounds lovely."
        for topic in ("tea", "bees", "jazz", "castles", "whales", "origami", "volcanoes")
    ]
    return [
        "Our staging server port is 12345.",
        chatter[0],
        "We deploy on Fridays, right?",
        chatter[1],
        "not sure about the cache, maybe we can postpone that",
        chatter[2],
        "no, use pnpm not npm",
        *chatter[3:5],
        "the budget is 4,200 euros",
        "call it main-new",
        *chatter[5:],
    ]


def test_when_the_record_shrinks_chatter_goes_before_facts_and_decisions() -> None:
    messages = _chat()
    full = shorten_messages(messages, 10_000, COUNT)
    kept_facts = (
        "Our staging server port is 12345.", "We deploy on Fridays, right?",
        "not sure about the cache, maybe we can postpone that", "no, use pnpm not npm",
        "the budget is 4,200 euros", "call it main-new",
    )
    # The facts' bullets and the "[messages i-j omitted]" lines between them.
    facts_only = sum(COUNT(f) + 8 for f in kept_facts) + 6 * 10
    assert COUNT(full) > facts_only + 100  # the chatter must go for the record to fit
    for budget in range(facts_only, COUNT(full), 10):
        text = shorten_messages(messages, budget, COUNT)
        assert COUNT(text) <= budget
        for fact in kept_facts:
            assert fact in text, (budget, fact, text)
    tight = shorten_messages(messages, facts_only, COUNT)
    assert "Tell me about" not in tight and "That sounds lovely." not in tight
