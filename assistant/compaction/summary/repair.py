"""A second attempt that asks again only for the sections that said nothing (docs/COMPACTION.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from assistant.compaction.summary.clean import (
    CONTENT_SECTIONS,
    GOAL_SILENT,
    MIN_INFORMATIVE,
    SAYS_NOTHING,
    Known,
    heading_blocks,
    parse_sections,
    silent_sections,
)
from assistant.compaction.summary.prompts import FACT_HOMES


def repairable(problems: Sequence[str]) -> bool:
    """Whether every problem is one a repair can fix: sections that say nothing."""
    return bool(problems) and all(
        p == GOAL_SILENT or p.startswith(SAYS_NOTHING) for p in problems
    )


def sections_to_repair(
    text: str, known: Known, users: Known | None, facts: Mapping[str, Sequence[str]]
) -> list[str]:
    """The silent Goal and the silent content sections some fact belongs to (without a fact
    the model has nothing new to go on); empty when that cannot make the summary pass."""
    goal_silent, silent = silent_sections(parse_sections(text), known, users)
    homes = {home for group in facts for home in FACT_HOMES.get(group, (group,))}
    content = [name for name in silent if name in homes]
    saying = len(CONTENT_SECTIONS) - len(silent)
    if saying < MIN_INFORMATIVE and saying + len(content) < MIN_INFORMATIVE:
        return []
    if goal_silent and "Goal" not in homes:
        return []
    return (["Goal"] if goal_silent else []) + (content if saying < MIN_INFORMATIVE else [])


def repair_facts(
    facts: Mapping[str, Sequence[str]], names: Sequence[str]
) -> dict[str, list[str]]:
    """The fact groups that belong under ``names``."""
    return {
        group: list(lines) for group, lines in facts.items()
        if any(name in FACT_HOMES.get(group, (group,)) for name in names)
    }


def splice(text: str, reply: str, names: Sequence[str]) -> str:
    """``text`` with the bullets under each of ``names`` replaced by ``reply``'s (a reply
    without one of them leaves that section as it was)."""
    wanted = {n.lower() for n in names}
    new = {
        name.lower(): [line for line in lines if line.strip()]
        for _, name, lines in heading_blocks(reply)
        if name.lower() in wanted
    }
    out: list[str] = []
    for heading, name, lines in heading_blocks(text):
        out.append(heading)
        key = name.lower()
        if new.get(key):
            out.extend(new[key])
            if lines and not lines[-1].strip():
                out.append("")
        else:
            out.extend(lines)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()
