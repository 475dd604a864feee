"""What the user gets (issue 25): facts stated early, chatter until the context compacts,
then questions about the facts, answered by the real embedded model through the session
service (the terminal chat's and the window's core), with the settings as shipped: local
mode, prompts kept within the size the registry says the model answers well from
(``effective_context``, measured with the answer benchmark; the window stays 8,192), recall
as its switch says, and the record of what the user said keeping facts ahead of chatter.

The work is bounded: eight long chatter turns (at least one compaction within the measured
size; the whole window would hold them all), 48-token replies, temperature 0, one CPU
thread. ``python -m bench.recall_answers --shipped`` runs the same scenario at any length.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.llm.registry import load_registry
from bench.recall_answers import FACTS, run

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_facts_said_before_the_compactions_are_answered(
    embedded_model_path: Path, tmp_path: Path
) -> None:
    registry = load_registry()
    entry = registry.by_file(embedded_model_path.name)
    assert entry is not None and entry.effective_context is not None
    got = run(str(embedded_model_path), window=None, chatter_turns=8, recall=None,
              folder=tmp_path)
    assert got.window == entry.effective_context  # the measured size, not the 8,192 window
    assert got.compactions >= 1  # the facts are out of the kept messages
    assert 0 < got.largest_prompt <= got.window
    answered = [r for r in got.replies if r["ok"]]
    assert len(got.replies) == len(FACTS)
    assert len(answered) >= 4, got.replies  # a clear majority of the five
    if Settings().compaction.recall:  # the chat's index was kept beside the chat file
        assert list((tmp_path / "sessions" / ".recall").glob("*.sqlite"))
