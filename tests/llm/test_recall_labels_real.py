"""Recall's labels do not reach a reply (issue 43): asked to repeat what recall brought back,
the real SmolLM2 copied the block's lines with their labels ("- (turn 1, I said, lines 1-2)
- answers under 60 words") in 4 of 13 prompts of ``bench.recall_leak``; a chat model is now
shown the excerpts without them (:func:`assistant.llm.transcript_recall.without_labels`).
Bounded: four short prompts, 40 tokens each, at temperature 0."""

from __future__ import annotations

import re
from typing import Any

import pytest

from assistant.llm.base import GenerationOptions
from bench.recall_leak import block_text

pytestmark = pytest.mark.integration

SYSTEM = ("You are a helpful assistant running offline on the user's computer. Answer briefly "
          "and accurately. Respect every constraint the user states.")
#: (the question, recall's excerpts as (label, text), what a reply that answers holds): the
#: prompts whose replies carried a label with the labeled block.
ASKS = (
    ("Thanks. Repeat the code once more.",
     (("turn 2, I said, lines 1-2", "def add(a, b):\n    return a + b"),), "return a + b"),
    ("Quote the line of config.py that sets the port.",
     (("turn 3, read_file config.py, line 12", "PORT = 8431"),), "8431"),
    ("Repeat my constraints, please.",
     (("turn 1, I said, lines 1-2", "- answers under 60 words\n- dates as YYYY-MM-DD"),),
     "YYYY-MM-DD"),
    ("Thanks. Repeat the code once more.",
     (("turn 2, I said, line 1", "def parse(path):"),
      ("turn 2, I said, lines 4-5", "for line in f:\n    yield line.strip()")),
     "line.strip()"),
)
LABEL = re.compile(r"\bturn \d+\b|\bI said\b|\blines? \d+(?:-\d+)?\)|read_file\b")


def _reply(backend: Any, messages: list[dict[str, str]]) -> str:
    text = ""
    for event in backend.generate(messages, GenerationOptions(max_tokens=40, temperature=0.0)):
        text += event.delta
    return text


def test_a_reply_repeating_recalled_text_carries_no_label(real_backend: Any) -> None:
    replies = []
    for question, excerpts, _answer in ASKS:
        block = block_text(list(excerpts))
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Can you keep an eye on what I paste today?"},
            {"role": "assistant", "content": "Of course. Paste it and I will keep it in mind."},
            {"role": "user", "content": f"{block}\n\n{question}"},
        ]
        replies.append(_reply(real_backend, messages))
    leaked = [r for r in replies if LABEL.search(r)]
    assert not leaked, leaked
    # ... and it still answers from them (with the labels: 4 of 4 replies answered, each
    # with a label; without them 2 of these 4 in bench.recall_leak).
    answered = [r for r, (_q, _e, answer) in zip(replies, ASKS, strict=True) if answer in r]
    assert len(answered) >= 2, replies
