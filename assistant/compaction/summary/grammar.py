"""The GBNF grammar a model-written summary is generated under (docs/COMPACTION.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Characters per token assumed when sizing bullets: SmolLM2 writes ~4.2 per token in
#: prose but one token per digit, so a summary full of numbers and paths needs the lower
#: figure to stay inside its budget (a reply cut at the budget is rejected).
CHARS_PER_TOKEN = 3.0
#: Characters no bullet may hold (docs/COMPACTION.md), as a GBNF class body.
FORBIDDEN = r"\n\r\t#`<>{}\[\]|"
#: A bullet may not start with these either (a nested list, emphasis, a space).
FORBIDDEN_FIRST = FORBIDDEN + " *+_=~-"


@dataclass(frozen=True)
class Section:
    name: str
    #: The heading line(s) written before the bullets ("## Progress\n### Done").
    heading: str
    #: Share of the budget's characters.
    weight: float
    #: Most bullets.
    items: int


#: The summary's sections in order (:data:`assistant.compaction.summary.prompts.REQUIRED_SECTIONS`
#: are their top-level names; Progress has the three sub-headings).
SKELETON: tuple[Section, ...] = (
    Section("Goal", "## Goal", 0.14, 1),
    Section("Constraints & Preferences", "## Constraints & Preferences", 0.14, 2),
    Section("Done", "## Progress\n### Done", 0.16, 3),
    Section("In Progress", "### In Progress", 0.10, 1),
    Section("Blocked", "### Blocked", 0.06, 1),
    Section("Key Decisions", "## Key Decisions", 0.12, 2),
    Section("Next Steps", "## Next Steps", 0.12, 2),
    Section("Critical Context", "## Critical Context", 0.16, 3),
)

#: Tokens the fixed headings and bullet marks take (SmolLM2: 58 for the whole skeleton).
SKELETON_TOKENS = 64
#: No bullet gets less room than this many characters, however small the budget.
MIN_ITEM_CHARS = 40
MAX_ITEM_CHARS = 180


def min_budget() -> int:
    """The smallest reply budget the grammar fits in: the headings and one bullet of
    :data:`MIN_ITEM_CHARS` per section (171 tokens). A smaller budget cannot hold a summary
    of this shape: every reply would be cut at the length limit."""
    return SKELETON_TOKENS + math.ceil(len(SKELETON) * MIN_ITEM_CHARS / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Limit:
    section: Section
    items: int
    chars: int


def section_limits(budget: int) -> list[Limit]:
    """Bullets and characters per bullet for each section, for a reply of ``budget`` tokens.

    Headings take :data:`SKELETON_TOKENS`; the rest is shared by weight. A small budget
    first gives fewer bullets, then shorter ones (never under :data:`MIN_ITEM_CHARS`).
    """
    room = max(budget - SKELETON_TOKENS, 0) * CHARS_PER_TOKEN
    limits: list[Limit] = []
    for sec in SKELETON:
        share = int(room * sec.weight)
        items = max(min(sec.items, share // int(MIN_ITEM_CHARS * 1.5)), 1)
        chars = min(max(share // items, MIN_ITEM_CHARS), MAX_ITEM_CHARS)
        limits.append(Limit(sec, items, chars))
    return limits


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def summary_grammar(budget: int, only: Sequence[str] | None = None) -> str:
    """GBNF (root rule ``root``) for a summary of at most about ``budget`` tokens; with
    ``only``, for those sections alone (a repair, :mod:`.repair`), each bounded as in the
    whole summary."""
    rules: list[str] = []
    parts: list[str] = []
    limits = [lim for lim in section_limits(budget) if only is None or lim.section.name in only]
    for i, lim in enumerate(limits):
        lead = "" if i == 0 else ("\n" if lim.section.heading.startswith("###") else "\n\n")
        head = _literal(lead + lim.section.heading + "\n")
        more = f' ("\\n" item{i}){{0,{lim.items - 1}}}' if lim.items > 1 else ""
        parts.append(f"s{i}")
        rules.append(f"s{i} ::= {head} item{i}{more}")
        rules.append(f'item{i} ::= "- " first rest{{0,{lim.chars - 1}}}')
    rules.append(f"first ::= [^{FORBIDDEN_FIRST}]")
    rules.append(f"rest ::= [^{FORBIDDEN}]")
    return "\n".join([f"root ::= {' '.join(parts)}", *rules]) + "\n"


def follows_skeleton(text: str) -> bool:
    """Whether ``text`` has every heading of :data:`SKELETON`, in order (a reply written
    under :func:`summary_grammar` always has; one that has not was not constrained)."""
    pos = 0
    for sec in SKELETON:
        found = text.find(sec.heading + "\n", pos)
        if found < 0:
            return False
        pos = found + len(sec.heading)
    return True
