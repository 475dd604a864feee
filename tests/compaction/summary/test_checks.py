"""The validation table (:data:`assistant.compaction.summary.validate.CHECKS`): every check
rejects its bad case and accepts a good summary, and each says why it exists."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assistant.compaction.summary.validate import CHECKS, Check, Draft, validate_summary
from assistant.compaction.tokens import CountingBackend

from ..helpers import GOOD_SUMMARY

RULE = "Never use tabs for indentation, always use four spaces."
SOURCE = (
    f"[User]: {RULE} Please review src/file_0.py.\n[Assistant]: Will do.\n"
    "[Tool call]: read_file src/file_0.py\n[Tool result]: src/file_0.py has words"
)
GOOD = Draft(GOOD_SUMMARY, SOURCE, budget=500, count=CountingBackend().count,
             user_rules=(RULE,), user_text=f"{RULE} Please review src/file_0.py.")


def _with(section: str, bullet: str) -> str:
    lines = GOOD_SUMMARY.splitlines()
    i = next(n for n, line in enumerate(lines) if line.lstrip("#").strip() == section)
    lines[i + 1] = bullet
    return "\n".join(lines)


def _silent() -> str:
    text = GOOD_SUMMARY
    for section in ("Done", "In Progress", "Key Decisions", "Next Steps", "Critical Context"):
        lines = text.splitlines()
        i = next(n for n, line in enumerate(lines) if line.lstrip("#").strip() == section)
        lines[i + 1] = "- none"
        text = "\n".join(lines)
    return text


#: Each check's bad case: the good draft with one thing wrong.
BAD: dict[str, Draft] = {
    "empty": replace(GOOD, text="  \n"),
    "cut_off": replace(GOOD, finish_reason="length"),
    "over_budget": replace(GOOD, budget=40),
    "missing_sections": replace(GOOD, text=GOOD_SUMMARY.split("## Key Decisions")[0]),
    "acts": replace(GOOD, text=GOOD_SUMMARY + "\n[User]: and now the next file"),
    "says_nothing": replace(GOOD, text=_silent()),
    "invents": replace(GOOD, text=_with("Critical Context", "- src/file_0.py calls "
                                        "lib/payments_v2.py")),
    "contradicts": replace(GOOD, text=_with("Key Decisions", "- Use tabs for indentation "
                                            "in src/file_0.py")),
}


def test_every_check_has_a_bad_case_and_a_reason() -> None:
    assert set(BAD) == {check.name for check in CHECKS}
    assert len({check.name for check in CHECKS}) == len(CHECKS)
    for check in CHECKS:
        assert check.reason.strip() and "\n" not in check.reason, check.name


def test_the_good_summary_passes_every_check() -> None:
    for check in CHECKS:
        assert check.problem(GOOD) is None, check.name
    assert validate_summary(
        GOOD.text, source=GOOD.source, budget=GOOD.budget, count=GOOD.count,
        user_rules=GOOD.user_rules, user_text=GOOD.user_text,
    ) == []


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_each_check_rejects_its_bad_case(check: Check) -> None:
    bad = BAD[check.name]
    problem = check.problem(bad)
    assert problem, check.name
    problems = validate_summary(
        bad.text, source=bad.source, budget=bad.budget, count=bad.count,
        finish_reason=bad.finish_reason, user_rules=bad.user_rules, user_text=bad.user_text,
    )
    assert problem in problems
    # The bad case is wrong in one way only: no other check speaks of it (an empty reply
    # ends the judging; a summary without its sections is not judged as saying nothing).
    assert problems == [problem], problems


def test_an_empty_reply_ends_the_judging() -> None:
    assert validate_summary("", source=SOURCE, budget=500, count=GOOD.count) == ["empty"]
