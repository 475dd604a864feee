"""Recall's excerpts as the transcript form shows them to a base model
(assistant/llm/transcript_recall.py): plain lines of context between the question and its
restatement, the worked examples' facts written the same way; the chat form's text and
anything that is not recall's block as written."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.compaction.recall import Excerpt as RecallExcerpt
from assistant.compaction.recall import _line
from assistant.compaction.request import CallRequest
from assistant.conversation import Message
from assistant.llm.template import ChatTemplate
from assistant.llm.transcript import WORKED_EXAMPLES, TranscriptTemplate
from assistant.llm.transcript_recall import (
    HEADING_AFTER,
    HEADING_BEFORE,
    plain_line,
    split_block,
)
from assistant.llm.transcript_recall import Excerpt as Said
from tests.compaction.test_recall import SYSTEM, _controller, _long_chat

#: The worked examples as they are shown beside recall's excerpts.
SAID_EXAMPLES = "".join(
    f"User: Earlier I said: {said}\n\nAssistant: {answer}\n\n"
    for said, answer in WORKED_EXAMPLES
)
QUESTION = "Which port does the staging server use?"
BLOCK = (
    f"{HEADING_BEFORE}\n"
    "- (turn 1, I said) Our staging server port is 4406.\n"
    "- (turn 5, read_file config/app.toml, lines 3-4) [server]\n"
    "  port = 4406"
)


def _chat(content: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": content},
    ]


def test_a_base_model_sees_the_excerpts_as_plain_lines_between_the_question_and_again_it() -> None:
    text = TranscriptTemplate(bos_token="<bos>").render(_chat(f"{BLOCK}\n\n{QUESTION}"))
    assert text == (
        "<bos>Be brief.\n\nUser: hi\n\nAssistant: Hello.\n\n"
        + SAID_EXAMPLES
        + f"User: {QUESTION}\n\n"
        "Earlier I said: Our staging server port is 4406.\n"
        "From read_file config/app.toml, lines 3-4: [server]\nport = 4406\n\n"
        f"{QUESTION}\n\nAssistant:"
    )
    assert "(turn" not in text  # no label for the model to copy


def test_the_examples_say_their_facts_as_excerpts_only_beside_excerpts() -> None:
    plain = TranscriptTemplate().render(_chat(QUESTION))
    assert "Earlier I said" not in plain
    assert plain.endswith(f"User: {QUESTION}\n\nAssistant:")
    first_said, first_answer = WORKED_EXAMPLES[0]
    assert f"User: {first_said}\n\nAssistant: {first_answer}\n\n" in plain


@pytest.mark.parametrize(
    ("label", "body", "shown"),
    [
        ("turn 3, I said", "The budget is 84400 euros.",
         "Earlier I said: The budget is 84400 euros."),
        ("turn 5, I said, lines 1-3", "i would only want e2e tests",
         "Earlier I said, lines 1-3: i would only want e2e tests"),
        ("turn 6, you called", "run_command git commit -m \"Add plan (draft)\"",
         "Earlier you ran run_command git commit -m \"Add plan (draft)\""),
        ("turn 2, you replied", "Port 4406.", "Earlier you replied: Port 4406."),
        ("turn 9, run_command npm run check, line 40", "Skipped 2 fixes.",
         "From run_command npm run check, line 40: Skipped 2 fixes."),
        ("turn 1, read_file .../src/tui/tui-renderer.ts, line 600", "// Queue it",
         "From read_file .../src/tui/tui-renderer.ts, line 600: // Queue it"),
    ],
)
def test_every_label_recall_writes_becomes_a_plain_line(label: str, body: str, shown: str) -> None:
    written = _line(RecallExcerpt("m1", label, body))  # as recall writes it
    block = split_block(f"{HEADING_BEFORE}\n{written}\n\n{QUESTION}")
    assert block is not None and block.message == QUESTION
    (excerpt,) = block.excerpts
    assert excerpt.turn == label.split(",")[0] and excerpt.text == body
    assert plain_line(excerpt) == shown


def test_a_multi_line_excerpt_keeps_its_lines() -> None:
    written = _line(RecallExcerpt("m1", "turn 4, read_file a.py, lines 10-12",
                                  "def f():\n    return 1\n\nx = 2"))
    block = split_block(f"{HEADING_BEFORE}\n{written}\n\nWhat does f return?")
    assert block is not None
    assert block.excerpts == (Said("turn 4", "read_file a.py", "lines 10-12",
                                   "def f():\n    return 1\n\nx = 2"),)


@pytest.mark.parametrize(
    "content",
    [
        QUESTION,  # no excerpts
        f"{QUESTION}\n\n{BLOCK.replace(HEADING_BEFORE, HEADING_AFTER)}",  # placed after
        f"{BLOCK}",  # nothing after the block
        f"{HEADING_BEFORE}\nthe user wrote this line\n\n{QUESTION}",  # not recall's lines
        f"{HEADING_BEFORE}\n- (no turn here) x\n\n{QUESTION}",
    ],
)
def test_what_is_not_recalls_block_as_written_is_shown_as_it_is(content: str) -> None:
    assert split_block(content) is None
    text = TranscriptTemplate().render(_chat(content))
    assert text.endswith(f"User: {content}\n\nAssistant:")


def test_the_chat_form_shows_the_excerpts_without_their_labels() -> None:
    """(Shown as recall wrote them, chat models copied the labels into replies:
    tests/llm/test_recall_labels_real.py.)"""
    content = f"{BLOCK}\n\n{QUESTION}"
    text = ChatTemplate(None).render(_chat(content))
    block = split_block(content)
    assert block is not None
    texts = "\n\n".join(e.text for e in block.excerpts)
    assert f"<|im_start|>user\nFrom earlier in this chat:\n{texts}\n\n{QUESTION}<|im_end|>" in text
    assert "(turn " not in text


def test_a_compacted_fact_recall_brings_back_reaches_a_base_model_as_a_plain_line() -> None:
    ctrl, _ = _controller()
    conv = _long_chat(ctrl)
    conv.append(Message(role="user", content="How much is the budget?"))
    req = ctrl.prepare(CallRequest(conv, SYSTEM))
    assert req.recall is not None
    text = TranscriptTemplate().render(req.messages)
    assert text.endswith(
        "User: How much is the budget?\n\n"
        "From read_file notes.txt, line 17: Note 17: the project budget is 4,200 euros.\n\n"
        "How much is the budget?\n\nAssistant:"
    )
