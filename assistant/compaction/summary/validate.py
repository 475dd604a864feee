"""Checks a model-written summary before it replaces real messages: a table of named checks.
More in docs/COMPACTION.md."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from assistant.compaction.summary.clean import (
    CONTENT_SECTIONS,
    GOAL_SILENT,
    MIN_INFORMATIVE,
    SAYS_NOTHING,
    Known,
    contradiction,
    invented,
    parse_sections,
    silent_sections,
)
from assistant.compaction.summary.markup import has_tool_markup
from assistant.compaction.summary.prompts import REQUIRED_SECTIONS
from assistant.compaction.summary.serialize import TRANSCRIPT_MARKERS


@dataclass(frozen=True)
class Draft:
    """One cleaned reply and what it is judged against."""

    text: str
    #: The conversation as the model saw it (a transcript or the chat's messages).
    source: str
    #: Tokens the summary proper may use.
    budget: int
    count: Callable[[str], int]
    #: Why generation stopped: "stop", "length" (cut at max_tokens), "repetition" (looped).
    finish_reason: str = "stop"
    #: The user's recorded rules.
    user_rules: Sequence[str] = ()
    #: Other text the summary may draw on: the previous summary and the user's record.
    reference: str = ""
    #: What the user wrote (a Goal naming it in other words says something).
    user_text: str = ""

    @cached_property
    def sections(self) -> dict[str, list[str]]:
        return parse_sections(self.text)

    @cached_property
    def known(self) -> Known:
        return Known(self.source + "\n" + self.reference)

    @cached_property
    def missing(self) -> list[str]:
        return missing_sections(self.text)


@dataclass(frozen=True)
class Check:
    name: str
    #: One line: the failure it caught, of which model, where (or what it protects).
    reason: str
    #: The problem with the draft, or None.
    problem: Callable[[Draft], str | None]
    #: A problem here ends the judging (nothing else can be said of the draft).
    final: bool = False


def missing_sections(text: str) -> list[str]:
    def present(name: str) -> bool:
        pattern = r"^\s*(?:#{1,6}\s*|\*\*)?" + re.escape(name).replace(r"\ ", r"\s+")
        return re.search(pattern, text, re.IGNORECASE | re.MULTILINE) is not None

    return [name for name in REQUIRED_SECTIONS if not present(name)]


def _empty(d: Draft) -> str | None:
    return None if d.text.strip() else "empty"


def _cut_off(d: Draft) -> str | None:
    if d.finish_reason == "length":
        return "cut off at the length limit"
    if d.finish_reason == "repetition":
        return "stopped: it kept repeating the same line"
    return None


def _over_budget(d: Draft) -> str | None:
    size = d.count(d.text)
    return f"{size} tokens over the budget of {d.budget}" if size > d.budget else None


def _missing(d: Draft) -> str | None:
    return "missing sections: " + ", ".join(d.missing) if d.missing else None


def _acts(d: Draft) -> str | None:
    if any(marker in d.text for marker in TRANSCRIPT_MARKERS):
        return "continues the transcript"
    return "contains tool-call markup" if has_tool_markup(d.text) else None


def _says_nothing(d: Draft) -> str | None:
    if d.missing:
        return None  # judged by ``missing_sections``
    users = Known(d.user_text) if d.user_text else None
    goal_silent, empty = silent_sections(d.sections, d.known, users)
    if goal_silent:
        return GOAL_SILENT
    if len(CONTENT_SECTIONS) - len(empty) < MIN_INFORMATIVE:
        return SAYS_NOTHING + ", ".join(empty)
    return None


def _invents(d: Draft) -> str | None:
    made_up = [w for lines in d.sections.values() for line in lines
               for w in invented(line, d.known)]
    return "names things not in the conversation: " + ", ".join(made_up[:4]) if made_up else None


def _contradicts(d: Draft) -> str | None:
    for lines in d.sections.values():
        for line in lines:
            rule = contradiction(line, d.user_rules)
            if rule:
                return f"contradicts the user ({json.dumps(rule[:80])})"
    return None


#: The checks, in the order their problems are reported.
CHECKS: tuple[Check, ...] = (
    Check("empty", "a reply with nothing in it would replace the span with nothing (protects "
          "the user; no model failure recorded)", _empty, final=True),
    Check("cut_off", "a reply cut at max_tokens loses its last sections: SmolLM2-135M's W2 "
          "update at full size (docs/ANSWERS.md); a looping reply is stopped the same way",
          _cut_off),
    Check("over_budget", "protects the window: a summary over its budget would be cut to fit "
          "(no model failure recorded; the grammar bounds each section)", _over_budget),
    Check("missing_sections", "the free prompts: SmolLM2-135M's in-context summary of a full "
          "window had only the Goal, twice (docs/BENCHMARKS.md, commit 5246e39)", _missing),
    Check("acts", "protects the user: a '[User]:' line or a tool call in the summary reads "
          "to the chat model as a turn to continue or a call to run (no failure recorded)",
          _acts),
    Check("says_nothing", "forced headings over filler: SmolLM2-135M's W2 summaries at full "
          "size said nothing specific in Done..Critical Context (docs/ANSWERS.md)",
          _says_nothing),
    Check("invents", "a path the chat never named sends the model to a file that does not "
          "exist: SmolLM2-135M wrote src/billing/vendor.md (commit 867c0c6)", _invents),
    Check("contradicts", "a bullet saying the opposite of the user's rule would override it: "
          "SmolLM2-135M's W2 summary against 'Keep every answer under ...' "
          "(docs/ANSWERS.md)", _contradicts),
)


def validate_summary(
    text: str, *, source: str, budget: int, count: Callable[[str], int],
    finish_reason: str = "stop", user_rules: Sequence[str] = (), reference: str = "",
    user_text: str = "",
) -> list[str]:
    """Problems with ``text`` as a summary of ``source`` (empty list: accepted); see
    :class:`Draft` for the arguments and :data:`CHECKS` for what is judged."""
    draft = Draft(text, source, budget, count, finish_reason, user_rules, reference, user_text)
    problems: list[str] = []
    for check in CHECKS:
        problem = check.problem(draft)
        if problem is not None:
            problems.append(problem)
            if check.final:
                break
    return problems
