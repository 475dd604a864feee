"""What the user gets (issue 25): facts stated early, chatter until the context compacts,
then questions about the facts, answered by the real embedded model through the session
service (the terminal chat's and the window's core), with the settings as shipped (the
record of what the user said keeps facts ahead of chatter; recall as its switch says).

The work is bounded: a 2,048-token local window (the app's local values scaled to it, as
for a model with that window), eight long chatter turns (two compactions), 48-token
replies, temperature 0, one CPU thread. ``python -m bench.recall_answers`` runs the same
scenario with recall on and off, at any window.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.config import Settings
from bench.recall_answers import FACTS, run

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_facts_said_before_the_compactions_are_answered(
    embedded_model_path: Path, tmp_path: Path
) -> None:
    shipped = Settings().compaction.recall  # what a user has, recall as shipped
    got = run(str(embedded_model_path), window=2_048, chatter_turns=8, recall=shipped,
              folder=tmp_path)
    assert got.compactions >= 1  # the facts are out of the kept messages
    answered = [r for r in got.replies if r["ok"]]
    assert len(got.replies) == len(FACTS)
    assert len(answered) >= 4, got.replies  # a clear majority of the five
    if shipped:  # the chat's index was kept beside the chat file, as in the app
        assert list((tmp_path / "sessions" / ".recall").glob("*.sqlite"))
