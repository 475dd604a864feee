"""The probe of recall's layouts for a base model (bench/recall_form.py): every layout it
compares shows the excerpts' facts and ends with the question for the model to answer."""

from __future__ import annotations

import pytest

from assistant.llm.transcript import TranscriptTemplate
from assistant.llm.transcript_recall import HEADING_BEFORE, lay_out
from bench.recall_form import LAYOUTS

QUESTION = "Which port does the staging server use?"
CONTENT = f"{HEADING_BEFORE}\n- (turn 1, I said) Our staging server port is 4406.\n\n{QUESTION}"
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": CONTENT}]


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_every_layout_shows_the_fact_and_asks_last(name: str) -> None:
    text = TranscriptTemplate(recall_layout=LAYOUTS[name]).render(MESSAGES)
    assert text.count("port is 4406") == 1
    assert text.endswith(f"{QUESTION}\n\nAssistant:")


def test_labeled_is_the_block_as_recall_wrote_it_and_shipped_is_the_apps() -> None:
    labeled = TranscriptTemplate(recall_layout=LAYOUTS["labeled"]).render(MESSAGES)
    assert f"User: {CONTENT}\n\nAssistant:" in labeled
    assert LAYOUTS["shipped"] is lay_out
    assert TranscriptTemplate().render(MESSAGES) == TranscriptTemplate(
        recall_layout=LAYOUTS["shipped"]).render(MESSAGES)
