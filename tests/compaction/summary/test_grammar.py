"""The summary grammar: what it lets a model write, checked with our reader and with the
real llama.cpp grammar engine on the embedded model's vocabulary."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.compaction.summary.grammar import (
    CHARS_PER_TOKEN,
    SKELETON,
    SKELETON_TOKENS,
    follows_skeleton,
    section_limits,
    summary_grammar,
)
from assistant.compaction.summary.prompts import REQUIRED_SECTIONS
from tests.fakes.gbnf import accepts
from tests.llm.helpers import grammar_accepts

from ..helpers import FILLER_SUMMARY, GOOD_SUMMARY

BUDGET = 300


def _summary(**bullets: str) -> str:
    """A summary with one bullet per section (``bullets`` overrides by section name)."""
    parts: list[str] = []
    for i, sec in enumerate(SKELETON):
        lead = "" if i == 0 else ("\n" if sec.heading.startswith("###") else "\n\n")
        body = bullets.get(sec.name.replace(" & ", "_").replace(" ", "_"), f"- {sec.name} x")
        parts.append(f"{lead}{sec.heading}\n{body}")
    return "".join(parts)


def test_the_skeleton_is_the_required_sections_in_order() -> None:
    text = _summary()
    positions = [text.index(f"## {name}") for name in REQUIRED_SECTIONS]
    assert positions == sorted(positions)
    assert follows_skeleton(text) and follows_skeleton(GOOD_SUMMARY)
    assert not follows_skeleton(text.replace("### Blocked", "### Stuck"))


OUT_OF_LANGUAGE = {
    "transcript label": {"Done": "- [User]: read the file"},
    "tool-call fence": {"Done": "- ```tool_call"},
    "tool-call tag": {"Next_Steps": "- <tool_call>read_file</tool_call>"},
    "bare JSON call": {"Critical_Context": '- {"name": "read_file", "arguments": {}}'},
    "a table": {"Key_Decisions": "- a | b"},
    "a nested heading": {"Goal": "- goal\n## Extra"},
    "a nested list": {"Done": "- - nested"},
    "an empty bullet": {"Goal": "- "},
    "no bullet mark": {"Goal": "plain text"},
    "a blank line inside a section": {"Done": "- one\n\n- two"},
}


@pytest.mark.parametrize("case", sorted(OUT_OF_LANGUAGE))
def test_what_the_grammar_forbids(case: str) -> None:
    grammar = summary_grammar(BUDGET)
    assert accepts(grammar, _summary())
    assert not accepts(grammar, _summary(**OUT_OF_LANGUAGE[case]))


def test_sections_are_bounded_in_bullets_and_characters() -> None:
    grammar = summary_grammar(BUDGET)
    limits = {lim.section.name: lim for lim in section_limits(BUDGET)}
    goal = limits["Goal"]
    assert accepts(grammar, _summary(Goal="- " + "g" * goal.chars))
    assert not accepts(grammar, _summary(Goal="- " + "g" * (goal.chars + 1)))
    done = limits["Done"]
    many = "\n".join(f"- step {i}" for i in range(done.items))
    assert accepts(grammar, _summary(Done=many))
    assert not accepts(grammar, _summary(Done=many + "\n- one more"))
    # The headings cannot be dropped or reordered.
    assert not accepts(grammar, _summary().replace("## Key Decisions\n- Key Decisions x\n\n", ""))


def test_a_repair_grammar_has_only_the_sections_asked_for() -> None:
    grammar = summary_grammar(BUDGET, only=["Goal", "In Progress", "Next Steps"])
    limits = {lim.section.name: lim for lim in section_limits(BUDGET)}
    reply = "## Goal\n- a goal\n### In Progress\n- doing x\n\n## Next Steps\n- then y"
    assert accepts(grammar, reply)
    assert not accepts(grammar, _summary())  # the whole summary is not what was asked
    assert not accepts(grammar, reply.replace("## Goal\n- a goal\n", ""))
    # Each section keeps the bounds it has in the whole summary.
    assert accepts(grammar, reply.replace("a goal", "g" * limits["Goal"].chars))
    assert not accepts(grammar, reply.replace("a goal", "g" * (limits["Goal"].chars + 1)))


@pytest.mark.parametrize("budget", [64, 128, 300, 629, 2_000])
def test_the_longest_reply_fits_the_budget(budget: int) -> None:
    limits = section_limits(budget)
    assert [lim.section for lim in limits] == list(SKELETON)
    chars = sum(lim.items * (lim.chars + 3) for lim in limits)
    if budget >= 300:  # small budgets keep a floor per bullet so that something fits
        assert SKELETON_TOKENS + chars / CHARS_PER_TOKEN <= budget * 1.05
    assert all(lim.items >= 1 and lim.chars >= 40 for lim in limits)
    bigger = section_limits(budget * 2)
    assert sum(b.items * b.chars for b in bigger) >= sum(lim.items * lim.chars for lim in limits)


def test_the_test_summaries_are_in_the_language_at_every_budget() -> None:
    for budget in range(32, 1_200, 16):
        grammar = summary_grammar(budget)
        assert accepts(grammar, GOOD_SUMMARY), budget
        assert accepts(grammar, FILLER_SUMMARY), budget


# -- the real grammar engine ------------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.parametrize("budget", [128, 314, 1_000])
def test_llama_cpp_parses_the_grammar_and_agrees_on_samples(
    real_backend: Any, budget: int
) -> None:
    grammar = summary_grammar(budget)
    real_backend.check_grammar(grammar)  # llama.cpp builds a sampler from it
    assert grammar_accepts(real_backend, grammar, _summary())
    assert grammar_accepts(real_backend, grammar, GOOD_SUMMARY)
    for case in ("transcript label", "bare JSON call", "tool-call fence", "a nested list"):
        assert not grammar_accepts(real_backend, grammar, _summary(**OUT_OF_LANGUAGE[case]))
    assert not grammar_accepts(real_backend, grammar, _summary() + "\n")  # nothing after it
