"""The probe of recall's labels in replies (bench/recall_leak.py): ``labeled`` shows the
block as recall writes it, ``shipped`` what the app shows a chat model, every form shows the
excerpts' text, and a reply is counted as leaking when it carries a label."""

from __future__ import annotations

import pytest

from assistant.llm.template import CHATML_TEMPLATE, ChatTemplate
from bench.recall_leak import ASKS, FORMS, LEAK, ask_prompts, block_text


def _render(form: str, messages: list[dict[str, str]]) -> str:
    template = ChatTemplate(CHATML_TEMPLATE)
    template.recall_unlabeled = form == "shipped"  # as the probe shows each form
    return template.render(FORMS[form](messages))


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_shows_the_excerpts_and_asks_last(form: str) -> None:
    for prompt, (question, excerpts, _answers) in zip(ask_prompts(), ASKS, strict=True):
        text = _render(form, prompt["messages"])
        for _label, excerpt in excerpts:
            assert excerpt.split("\n")[-1].strip() in text
        assert text.endswith(f"{question}<|im_end|>\n<|im_start|>assistant\n")


def test_labeled_is_recalls_block_and_shipped_is_the_apps() -> None:
    messages = ask_prompts()[0]["messages"]
    block = block_text([("turn 2, I said, lines 1-2", "def add(a, b):\n    return a + b")])
    assert messages[-1]["content"].startswith(block)
    assert "- (turn 2, I said, lines 1-2) def add(a, b):" in _render("labeled", messages)
    shipped = _render("shipped", messages)
    assert shipped == ChatTemplate(CHATML_TEMPLATE).render(messages)
    latest = shipped.split("<|im_start|>")[-2]
    assert "(turn" not in latest and "I said" not in latest


def test_a_label_in_a_reply_is_a_leak_and_the_answer_is_not() -> None:
    assert LEAK.search("- (turn 2, I said, lines 3) def add(a, b):")
    assert LEAK.search("# (read_file config.py, line 12) PORT = 8431")
    assert not LEAK.search("Sure, here is the code again:\n\ndef add(a, b):\n    return a + b")
