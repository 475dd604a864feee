"""Asking again for the sections that said nothing (:mod:`assistant.compaction.summary.repair`)."""

from __future__ import annotations

from assistant.compaction.summary import repair
from assistant.compaction.summary.clean import (
    GOAL_SILENT,
    Known,
    parse_sections,
)

from ..helpers import FILLER_SUMMARY, GOOD_SUMMARY

SOURCE = "[User]: Please read src/file_0.py and tell me about its words. [Assistant]: It has words."
FACTS = {
    "Goal": ["Please read src/file_0.py and tell me about its words."],
    "Done": ["The assistant used read_file on src/file_0.py."],
    "Next Steps": ["What does src/file_0.py say about words?"],
}


def test_only_sections_that_say_nothing_are_repairable_problems() -> None:
    assert repair.repairable([GOAL_SILENT])
    assert repair.repairable([GOAL_SILENT, "says nothing specific in: Done, Next Steps"])
    assert not repair.repairable([])
    assert not repair.repairable([GOAL_SILENT, "copies the conversation"])
    assert not repair.repairable(["contradicts the user (\"Never use tabs\")"])


def test_the_silent_goal_and_silent_sections_with_facts_are_asked_again() -> None:
    known = Known(SOURCE)
    names = repair.sections_to_repair(FILLER_SUMMARY, known, None, FACTS)
    # Key Decisions has no fact to go on: asking again would get the same nothing.
    assert names == ["Goal", "Done", "In Progress", "Next Steps"]
    assert repair.sections_to_repair(GOOD_SUMMARY, known, None, FACTS) == []
    # A good Goal with silent content: only the content.
    goal_ok = GOOD_SUMMARY.replace("- Read src/file_0.py\n### In", "- none\n### In")
    goal_ok = goal_ok.replace("- Answer about src/file_0.py", "- none")
    goal_ok = goal_ok.replace("- Read src/file_0.py whole", "- none")
    goal_ok = goal_ok.replace("- src/file_0.py has words", "- none")
    assert repair.sections_to_repair(goal_ok, known, None, FACTS) == [
        "Done", "In Progress", "Next Steps",
    ]
    # Without facts for enough sections, a repair cannot make the summary pass.
    assert repair.sections_to_repair(FILLER_SUMMARY, known, None, {"Goal": FACTS["Goal"]}) == []


def test_repair_facts_are_those_of_the_sections_asked_for() -> None:
    assert repair.repair_facts(FACTS, ["Goal"]) == {"Goal": FACTS["Goal"]}
    # In Progress is a home of what was done and of the latest request.
    assert set(repair.repair_facts(FACTS, ["In Progress"])) == {"Done", "Next Steps"}


def test_splice_replaces_the_bullets_of_the_sections_asked_for_only() -> None:
    reply = "## Goal\n- Learn what src/file_0.py says\n\n## Next Steps\n- Quote its words"
    out = repair.splice(FILLER_SUMMARY, reply, ["Goal", "Next Steps"])
    sections = parse_sections(out)
    assert sections["Goal"] == ["Learn what src/file_0.py says"]
    assert sections["Next Steps"] == ["Quote its words"]
    assert sections["Done"] == ["Nothing yet."]  # not asked: kept
    assert [line for line in out.splitlines() if line.startswith("#")] == [
        line for line in FILLER_SUMMARY.splitlines() if line.startswith("#")
    ]
    # A section the reply leaves out (or a heading it was not asked for) changes nothing.
    assert repair.splice(FILLER_SUMMARY, "## Goal\n- x", ["Next Steps"]) == FILLER_SUMMARY
