"""Validation stays honest under the grammar, on scripted replies.

Every reply here is one a model constrained by the summary grammar could write (the
scripted backend checks it), so the headings are always there: what is judged is what is
under them.
"""

from __future__ import annotations

import logging

import pytest

from assistant.compaction.budget import compaction_budget
from assistant.compaction.extractive import MechanicalState
from assistant.compaction.grammar import min_budget
from assistant.compaction.serialize import serialize
from assistant.compaction.summarizer import ModelSummarizer, SummaryOutcome, SummaryRequest
from assistant.compaction.tokens import CountingBackend
from assistant.compaction.validate import clean_summary, contradiction, validate_summary
from assistant.conversation import Conversation, Message
from assistant.llm.fake import ScriptedBackend

from .helpers import FILLER_SUMMARY, GOOD_SUMMARY, local_policy, tool_turn

COUNT = CountingBackend().count
RULE = "Never use tabs for indentation, always use four spaces."


def _conv() -> Conversation:
    conv = Conversation()
    conv.append(Message(role="user", content=f"{RULE} Please review src/file_0.py."))
    conv.append(Message(role="assistant", content="Will do."))
    for i in range(3):
        tool_turn(conv, i, size=5)
    return conv


def _request(conv: Conversation, budget: int = 300) -> SummaryRequest:
    return SummaryRequest(
        history=conv.messages, turn_prefix=(), previous=None, focus=None, budget=budget,
        state=MechanicalState(constraints=[RULE]), window=10_000,
    )


def _summarize(
    *replies: str, budget: int = 300, **backend: object
) -> tuple[SummaryOutcome, ScriptedBackend]:
    be = ScriptedBackend(list(replies), **backend)  # type: ignore[arg-type]
    out = ModelSummarizer(be).summarize(_request(_conv(), budget), None)
    return out, be


def _with(section: str, bullet: str, base: str = GOOD_SUMMARY) -> str:
    """``base`` with the bullet under ``section`` replaced."""
    lines = base.splitlines()
    i = next(n for n, line in enumerate(lines) if line.lstrip("#").strip() == section)
    lines[i + 1] = bullet
    return "\n".join(lines)


def test_a_grounded_summary_is_accepted_under_the_grammar() -> None:
    out, be = _summarize(GOOD_SUMMARY)
    assert out.kind == "model" and out.grammar and out.rejected == []
    assert be.calls[0].grammar is not None
    assert out.note == "written by the model under the summary grammar"


def test_forced_headings_with_empty_sections_are_rejected() -> None:
    empty = "\n".join(
        line if line.startswith("#") or not line.strip() else "- none"
        for line in GOOD_SUMMARY.splitlines()
    )
    out, be = _summarize(empty, FILLER_SUMMARY)
    assert out.kind == "extractive" and len(be.calls) == 2
    assert out.grammar  # the rejected replies were written under the grammar
    assert out.rejected == [
        "the Goal names nothing from the conversation",
        "the Goal names nothing from the conversation",
    ]
    assert "rejected twice" in out.note and "names nothing" in out.note


def test_a_goal_alone_does_not_make_a_summary() -> None:
    only_goal = GOOD_SUMMARY
    for section, filler in [
        ("Constraints & Preferences", "- Be helpful."), ("Done", "- Some progress was made."),
        ("In Progress", "- The assistant is working."), ("Key Decisions", "- It was decided."),
        ("Next Steps", "- Continue the work."), ("Critical Context", "- Nothing important."),
    ]:
        only_goal = _with(section, filler, only_goal)
    problems = validate_summary(only_goal, source=serialize(_conv().messages), budget=500,
                                count=COUNT)
    assert problems == [
        "says nothing specific in: Done, In Progress, Key Decisions, Next Steps, "
        "Critical Context"
    ]


def test_a_section_copied_into_every_other_is_cut_and_then_says_nothing() -> None:
    same = "- Read src/file_0.py"
    copied = GOOD_SUMMARY
    for section in ("In Progress", "Key Decisions", "Next Steps", "Critical Context"):
        copied = _with(section, same, copied)
    text, notes = clean_summary(copied)
    assert notes == ["dropped 4 repeated line(s)"]
    assert text.count(same) == 1 and text.count("- none") == 5  # with Blocked's own
    assert "## Key Decisions\n- none\n\n## Next Steps\n- none\n\n## Critical" in text
    out, _ = _summarize(copied, copied)
    assert out.kind == "extractive"
    assert out.rejected[0] == (
        "says nothing specific in: In Progress, Key Decisions, Next Steps, Critical Context"
    )


def test_a_loop_is_cut_and_what_remains_is_judged() -> None:
    looping = _with("Done", "- Read src/file_0.py\n- Read src/file_0.py")
    loop_line = "- src/file_0.py has words and words and words and words"
    looping = _with("Critical Context", loop_line, looping)
    text, notes = clean_summary(looping)
    assert notes == ["dropped 1 repeated line(s)", "cut 1 looping line(s)"]
    assert "- Read src/file_0.py\n### In Progress" in text
    kept = text.rsplit("\n", 1)[-1]
    assert kept.startswith("- src/file_0.py has words") and len(kept) < len(loop_line)
    # The local default budget (768) lets Done hold the repeated bullet (300 would not).
    out, be = _summarize(looping, budget=768)
    assert out.kind == "model" and out.text == text and len(be.calls) == 1


def test_text_copied_from_the_transcript_at_length_is_rejected() -> None:
    conv = _conv()
    conv.append(Message(role="user", content=(
        "The billing export runs nightly at two and writes invoices into the archive bucket "
        "for the finance team to reconcile every morning before nine.")))
    copied = GOOD_SUMMARY
    for section, span in [
        ("Goal", "The billing export runs nightly at two and writes invoices"),
        ("Done", "writes invoices into the archive bucket for the finance team"),
        ("In Progress", "for the finance team to reconcile every morning before nine"),
        ("Key Decisions", "export runs nightly at two and writes invoices into the"),
        ("Next Steps", "into the archive bucket for the finance team to reconcile"),
    ]:
        copied = _with(section, "- " + span, copied)
    problems = validate_summary(copied, source=serialize(conv.messages), budget=900,
                                count=COUNT)
    assert "copies the conversation" in problems


def test_content_contradicting_a_user_rule_is_rejected() -> None:
    assert contradiction("Use tabs for indentation in src/file_0.py", [RULE]) == RULE
    assert contradiction("always keep tabs", [RULE]) == RULE
    assert contradiction("Indent src/file_0.py with four spaces, not tabs", [RULE]) is None
    assert contradiction("Never use tabs in src/file_0.py", [RULE]) is None
    out, _ = _summarize(
        _with("Key Decisions", "- Use tabs for indentation in src/file_0.py"), GOOD_SUMMARY
    )
    assert out.kind == "model" and out.rejected == [f'contradicts the user ("{RULE}")']


def test_invented_paths_and_numbers_are_rejected() -> None:
    invented = _with("Critical Context", "- src/file_0.py calls lib/payments_v2.py port 8443")
    problems = validate_summary(invented, source=serialize(_conv().messages), budget=500,
                                count=COUNT)
    assert problems == ["names things not in the conversation: lib/payments_v2.py, 8443"]


def test_a_bullet_naming_invented_paths_is_dropped_and_the_rest_judged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # SmolLM2 under the grammar mixes the chat's words into paths it never saw.
    invented = _with("Key Decisions", "- Keep src/billing/vendor.md stable")
    caplog.set_level(logging.INFO, logger="assistant.compaction")
    out, be = _summarize(invented)
    assert out.kind == "model" and len(be.calls) == 1 and out.rejected == []
    assert "vendor.md" not in out.text
    assert "## Key Decisions\n- none\n\n## Next Steps" in out.text
    assert "naming things not in the conversation: src/billing/vendor.md" in caplog.text
    # Invented names everywhere leave nothing: rejected as saying nothing.
    everywhere = invented
    for section in ("Goal", "Done", "In Progress", "Next Steps", "Critical Context"):
        everywhere = _with(section, "- Read lib/payments_v2.py", everywhere)
    out, _ = _summarize(everywhere, everywhere)
    assert out.kind == "extractive"
    assert out.rejected[0] == "the Goal names nothing from the conversation"


TOOL_MARKUP = [
    '```tool_call\n{"name": "read_file", "arguments": {"path": "a.py"}}\n```',
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>',
    '{"name": "read_file", "arguments": {"path": "a.py"}}',
]


@pytest.mark.parametrize("markup", TOOL_MARKUP)
def test_tool_call_markup_is_stripped_or_rejected(markup: str) -> None:
    # The grammar cannot write it; a model on the free prompts can: it is stripped...
    text, notes = clean_summary(GOOD_SUMMARY + "\n\n" + markup)
    assert text == GOOD_SUMMARY and notes == ["removed 1 tool-call block(s)"]
    out, _ = _summarize(GOOD_SUMMARY + "\n\n" + markup, grammar_failure="no grammars here")
    assert out.kind == "model" and not out.grammar and out.text == GOOD_SUMMARY
    # ... and validation rejects what still holds it.
    problems = validate_summary(GOOD_SUMMARY + "\n" + markup, source="[User]: src/file_0.py",
                                budget=900, count=COUNT)
    assert "contains tool-call markup" in problems


def test_a_fenced_code_block_that_is_not_a_call_is_kept() -> None:
    code = "```python\nprint('hi')\n```"
    text, notes = clean_summary(GOOD_SUMMARY + "\n" + code)
    assert code in text and notes == []


def test_a_model_that_cannot_follow_grammars_gets_the_free_prompts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    be = ScriptedBackend([GOOD_SUMMARY, GOOD_SUMMARY], grammar_failure="no byte tokens")
    summarizer = ModelSummarizer(be)
    with caplog.at_level(logging.WARNING, logger="assistant.compaction"):
        first = summarizer.summarize(_request(_conv()), None)
    assert first.kind == "model" and not first.grammar
    assert [c.grammar is not None for c in be.calls] == [True, False]
    assert first.note == (
        "written by the model with the free prompts (no grammar: no byte tokens)"
    )
    assert "the summary grammar failed (no byte tokens)" in caplog.text
    summarizer.summarize(_request(_conv()), None)
    assert be.calls[-1].grammar is None  # not tried again for this model
    assert summarizer.grammar_state == "off"


def test_a_backend_that_ignores_the_grammar_is_noticed() -> None:
    free_text = GOOD_SUMMARY.replace("- Short answers", "Keep answers short, [please].")
    be = ScriptedBackend([free_text, GOOD_SUMMARY], ignore_grammar=True)
    summarizer = ModelSummarizer(be)
    out = summarizer.summarize(_request(_conv()), None)
    assert summarizer.grammar_state == "off"
    assert "backend cannot apply grammars" in summarizer.grammar_note
    assert out.kind == "model" and not out.grammar and be.calls[-1].grammar is None


def test_a_small_window_gives_the_model_part_what_the_grammar_needs() -> None:
    # A 1,280-token window scales the summary budget to 128: half of it (64) could never
    # hold the grammar's headings and one bullet per section.
    small = local_policy(window=1_280, reserve=256, keep_recent=256, summary_budget=128)
    assert compaction_budget(small, 100, COUNT).model == min_budget()
    # A window without room for it keeps the policy's share.
    tiny = local_policy(window=700, reserve=256, keep_recent=128, summary_budget=128)
    assert compaction_budget(tiny, 100, COUNT).model < min_budget()
    assert compaction_budget(local_policy(), 100, COUNT).model == 384
