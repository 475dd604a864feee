"""The sentences of what the user said that answer a question."""

from __future__ import annotations

from assistant.compaction.recall_sentences import best_sentences, names, score
from assistant.sessions.recall_text import query_terms

from .test_recall import PROSE


def test_sentences_naming_a_term_only_as_well_as_the_best_come_back() -> None:
    terms = query_terms("In which city did we agree to collect each channel?")
    # "channel" alone names two sentences; "collect ... channel" only one: that one is kept.
    got = best_sentences(PROSE, ["collect", "channel", "city"], terms, lambda t: len(t) // 4, 60)
    assert got == "We agreed to collect each channel in Porto once the copy is ready."
    # Two sentences as good as each other are both kept, in order, the gap marked.
    both = best_sentences(PROSE, ["checked"], ["checked"], lambda t: len(t) // 4, 60)
    assert both == (
        "The local cache is checked every 15 minutes before we export it. The empty channel "
        "is checked every 66 minutes before we validate it."
    )
    assert best_sentences(PROSE, ["budget"], ["budget"], lambda t: len(t) // 4, 60) is None
    assert best_sentences(PROSE, ["checked"], ["checked"], lambda t: len(t) // 4, 5) is None


def test_a_word_is_named_in_its_plain_forms_only() -> None:
    assert names("The cache is checked hourly.", "checks")
    assert not names("See the release checklist.", "checked")
    assert score(PROSE, ["local", "cache"], ["local", "cache", "checked"]) == (2, 3)
