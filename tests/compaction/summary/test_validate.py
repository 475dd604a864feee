"""Validation stays honest under the grammar, on scripted replies.

Every reply here is one a model constrained by the summary grammar could write (the
scripted backend checks it), so the headings are always there: what is judged is what is
under them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from assistant.compaction.budget import compaction_budget
from assistant.compaction.summary.clean import (
    Known,
    clean_summary,
    contradiction,
    cut_partial_word,
    parse_sections,
    respell,
)
from assistant.compaction.summary.extractive import MechanicalState
from assistant.compaction.summary.grammar import min_budget
from assistant.compaction.summary.serialize import serialize
from assistant.compaction.summary.summarizer import (
    TOO_SMALL_FOR_GRAMMAR,
    ModelSummarizer,
    SummaryOutcome,
    SummaryRequest,
)
from assistant.compaction.summary.validate import validate_summary
from assistant.compaction.tokens import CountingBackend
from assistant.conversation import Conversation, Message
from tests.fakes.scripted import ScriptedBackend

from ..helpers import FILLER_SUMMARY, GOOD_SUMMARY, local_policy, repair_from, tool_turn

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
    *replies: str | Callable[[list[dict[str, Any]]], str], budget: int = 300,
    **backend: object,
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
    out, be = _summarize(empty, repair_from(FILLER_SUMMARY))
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
    out, be = _summarize(copied, repair_from(copied))
    assert out.kind == "extractive"
    # The retry asked for the silent sections alone; its bullets repeat Done's and are
    # dropped like any repeated line.
    assert "said nothing specific under: In Progress, Next Steps, Critical Context" in \
        be.calls[1].messages[-1]["content"]
    assert out.rejected[1] == out.rejected[0]
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


def test_bullets_copied_from_the_conversation_are_dropped_outside_goal_and_constraints(
) -> None:
    said = ("The billing export runs nightly at two and writes invoices into the archive "
            "bucket for the finance team.")
    source = f"[User]: {said}\n[Assistant]: Noted, src/file_0.py has words."
    summary = _with("Goal", "- " + said)
    summary = _with("Key Decisions", "- runs nightly at two and writes invoices into the archive "
                    "bucket", summary)
    summary = _with("Critical Context", "- writes invoices into the archive bucket for the "
                    "finance team", summary)
    text, notes = clean_summary(summary, Known(source + GOOD_SUMMARY), source)
    assert "dropped 2 bullet(s) copied from the conversation" in notes
    sections = parse_sections(text)
    assert sections["Goal"] == [said]  # the user's goal in the user's words stays
    assert sections["Key Decisions"] == ["none"] and sections["Critical Context"] == ["none"]
    assert sections["Done"] == ["Read src/file_0.py"]  # short or own words: kept
    # Without the conversation nothing is judged a copy.
    kept = clean_summary(summary, Known(source + GOOD_SUMMARY))[0]
    assert "runs nightly at two" in parse_sections(kept)["Key Decisions"][0]


def test_content_contradicting_a_user_rule_is_rejected() -> None:
    assert contradiction("Use tabs for indentation in src/file_0.py", [RULE]) == RULE
    assert contradiction("always keep tabs", [RULE]) == RULE
    assert contradiction("Indent src/file_0.py with four spaces, not tabs", [RULE]) is None
    assert contradiction("Never use tabs in src/file_0.py", [RULE]) is None
    out, _ = _summarize(
        _with("Key Decisions", "- Use tabs for indentation in src/file_0.py"), GOOD_SUMMARY
    )
    assert out.kind == "model" and out.rejected == [f'contradicts the user ("{RULE}")']


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
    out, _ = _summarize(everywhere, repair_from(everywhere))
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
    free_text = GOOD_SUMMARY.replace("- Four spaces for indentation", "Four spaces, [please].")
    be = ScriptedBackend([free_text, GOOD_SUMMARY], ignore_grammar=True)
    summarizer = ModelSummarizer(be)
    out = summarizer.summarize(_request(_conv()), None)
    assert summarizer.grammar_state == "off"
    assert "backend cannot apply grammars" in summarizer.grammar_note
    assert out.kind == "model" and not out.grammar and be.calls[-1].grammar is None


def test_a_word_cut_at_the_bullet_limit_is_removed_not_taken_for_an_invented_name() -> None:
    known = Known("read src/validators/schema_check.py and src/core/draft_schedule.py")
    # The grammar stopped the bullet inside a path: the piece goes, the bullet stays.
    assert cut_partial_word("Read src/core/draft_schedule.py, src/v", known) == (
        "Read src/core/draft_schedule.py")
    assert cut_partial_word("Read src/core/draft_sch", known) == "Read"
    # A whole word or path, or one the conversation never has, is left alone (an invented
    # path is judged by the invention rule).
    assert cut_partial_word("Read src/core/draft_schedule.py", known) == (
        "Read src/core/draft_schedule.py")
    assert cut_partial_word("Read src/other/thing.py", known) == "Read src/other/thing.py"
    text, notes = clean_summary("## Goal\n- Review src/core/draft_schedule.py, src/v", known)
    assert text == "## Goal\n- Review src/core/draft_schedule.py" and not notes


def test_a_misspelled_path_of_the_conversation_is_put_back_not_dropped() -> None:
    known = Known("read docs/architecture_notes.md, src/billing/invoice.py and "
                       "src/billing/invoices.py; order 48213")
    # What SmolLM2 wrote for the file it had read (the real-model summary test's chat).
    assert respell("docs/architection_notes.md", known) == "docs/architecture_notes.md"
    assert respell("docs/architection_notes", known) == "docs/architecture_notes.md"
    # The closest of two near names; a name near none, or equally near two, stays invented.
    assert respell("src/billing/invoce.py", known) == "src/billing/invoice.py"
    assert respell("src/billing/invoicez.py", known) is None
    assert respell("docs/src", known) is None
    assert respell("lib/payments_v2.py", known) is None
    assert respell("48214", known) is None  # a wrong number is wrong
    text, notes = clean_summary(
        "## Progress\n### Done\n- Read docs/architection_notes.md\n- Read docs/src", known)
    assert text == "## Progress\n### Done\n- Read docs/architecture_notes.md"
    assert notes == [
        "put back misspelled name(s): docs/architection_notes.md -> docs/architecture_notes.md",
        "dropped bullet(s) naming things not in the conversation: docs/src",
    ]


def test_a_tool_action_restated_as_a_next_step_or_decision_is_dropped() -> None:
    # Under Next Steps "The assistant used edit_file on ..." would have the model redo it.
    known = Known("edit_file src/core/agent-session.ts; read_file docs/refactor.md")
    text, notes = clean_summary(
        "## Progress\n### Done\n- The assistant used edit_file on src/core/agent-session.ts\n"
        "### Blocked\n- read_file docs/refactor.md failed: not found\n\n## Key Decisions\n"
        "- The assistant used read_file on docs/refactor.md\n\n## Next Steps\n"
        "- The assistant used edit_file on docs/refactor.md", known)
    assert text == (
        "## Progress\n### Done\n- The assistant used edit_file on src/core/agent-session.ts\n"
        "### Blocked\n- read_file docs/refactor.md failed: not found\n\n## Key Decisions\n"
        "- none\n\n## Next Steps\n- none")
    assert notes == ["dropped 2 tool action(s) restated outside Done / In Progress"]


def test_a_bullet_naming_nothing_of_the_conversation_is_dropped() -> None:
    # What SmolLM2 copied from a previous extractive summary in the real session's replay.
    known = Known("read src/main.ts; now add the bash abort controller to class fields")
    text, notes = clean_summary(
        "## Progress\n### Done\n- extracted summary of what came before:\n"
        "- Read src/main.ts\n### In Progress\n- not recorded (extractive summary)\n"
        "### Blocked\n- none\n\n## Next Steps\n- Add the bash abort controller", known)
    assert text == (
        "## Progress\n### Done\n- Read src/main.ts\n### In Progress\n- none\n"
        "### Blocked\n- none\n\n## Next Steps\n- Add the bash abort controller")
    assert notes == ["dropped 2 bullet(s) naming nothing of the conversation"]


def test_a_goal_in_other_words_than_the_user_counts_and_a_generic_one_does_not() -> None:
    users = "could this module be refactored to be nicer? I want a plan to untangle it."
    source = f"[User]: {users}\n[Assistant]: I read main.ts and tui-renderer.ts."
    goal = "- Refactor the code to make it more maintainable, readable and testable."
    summary = _with("Goal", goal)
    assert validate_summary(summary, source=source + "\n" + GOOD_SUMMARY, budget=500,
                            count=COUNT, user_text=users) == []
    problems = validate_summary(_with("Goal", "- The goal is to summarize the chat."),
                                source=source + "\n" + GOOD_SUMMARY, budget=500, count=COUNT,
                                user_text=users)
    assert "the Goal names nothing from the conversation" in problems
    # Without the user's words the paraphrase is judged by the conversation alone.
    assert "the Goal names nothing from the conversation" in validate_summary(
        summary, source=source + "\n" + GOOD_SUMMARY, budget=500, count=COUNT)


def test_a_model_part_smaller_than_the_grammar_needs_is_not_asked_for() -> None:
    # Every reply would be cut at the length limit: the extractive summary is used at once,
    # without a prefill, and the card says why.
    out, be = _summarize(GOOD_SUMMARY, budget=min_budget() - 1)
    assert out.kind == "extractive" and be.calls == []
    assert f"the summary grammar needs {min_budget()}" in out.note
    assert TOO_SMALL_FOR_GRAMMAR in out.note  # the benchmark counts it apart
    out, be = _summarize(GOOD_SUMMARY, budget=min_budget())
    assert out.kind == "model" and len(be.calls) == 1


def test_a_small_window_gives_the_model_part_what_the_grammar_needs() -> None:
    # A 1,280-token window scales the summary budget to 128: half of it (64) could never
    # hold the grammar's headings and one bullet per section.
    small = local_policy(window=1_280, reserve=256, keep_recent=256, summary_budget=128)
    assert compaction_budget(small, 100, COUNT).model == min_budget()
    # A window without room for it keeps the policy's share (the model is then not asked).
    tiny = local_policy(window=700, reserve=256, keep_recent=128, summary_budget=128)
    assert compaction_budget(tiny, 100, COUNT).model < min_budget()
    assert compaction_budget(local_policy(), 100, COUNT).model == 384


def test_a_chat_without_decisions_or_work_in_progress_can_still_be_summarized() -> None:
    # Goal, Done and Next Steps say what the chat is about: accepted; with Done alone the
    # summary says too little.
    summary = GOOD_SUMMARY
    for section in ("In Progress", "Key Decisions", "Critical Context"):
        summary = _with(section, "- none", summary)
    source = serialize(_conv().messages)
    summary = _with("Next Steps", "- Review src/file_2.py next", summary)
    assert validate_summary(summary, source=source, budget=500, count=COUNT) == []
    only_done = _with("Next Steps", "- none", summary)
    assert validate_summary(only_done, source=source, budget=500, count=COUNT) == [
        "says nothing specific in: In Progress, Key Decisions, Next Steps, Critical Context"
    ]


def test_facts_copied_out_of_a_pasted_text_are_kept() -> None:
    """Qwen2.5-Coder 1.5B summarizing two pasted parts of a memo copied two of its planted
    facts into the summary. Dropped as copies, the summary said nothing and was rejected
    twice, and the card showed the extractive summary, which names neither fact. The record
    keeps only an excerpt of a paste, so such a copy is the one place the fact survives."""
    filler = ("The team reviewed the schedule again and discussed the details of the plan. "
              "Several people asked questions about the timing and the order of the steps. ") * 30
    facts = ("Marta Kowalski will lead the migration team starting on 3 March.",
             "The vendor chosen for the network cabling is Brightwire Ltd.")
    source = (f"[User]: Here is part 2 of the project memo, please keep it in mind:\n\n"
              f"{filler}\n{facts[0]} {filler} {facts[1]}\n{filler}\n\n"
              "[Assistant]: Noted, I will keep this part of the memo in mind.")
    reply = (
        "## Goal\n- Here is part 2 of the project memo, please keep it in mind:\n\n"
        "## Constraints & Preferences\n- none\n\n## Progress\n### Done\n"
        "- Noted, I will keep this part of the memo in mind.\n### In Progress\n"
        "- Several people asked questions about the timing and the order of the steps.\n"
        "### Blocked\n- No items are blocked at this time.\n\n"
        f"## Key Decisions\n- {facts[0]}\n\n## Next Steps\n- {facts[1]}\n\n"
        "## Critical Context\n- Noted, I will keep this part of the memo in mind.\n"
    )
    text, _notes = clean_summary(reply, Known(source), source)
    sections = parse_sections(text)
    assert sections["Key Decisions"] == [facts[0]] and sections["Next Steps"] == [facts[1]]
    assert "Several people" not in text  # a copy naming nothing is still dropped
    assert validate_summary(text, source=source, budget=800, count=len) == []
