"""Checks a model-written summary before it replaces real messages.

A summary is rejected when it is empty, cut off, over its token budget, missing a required
section (:data:`~assistant.compaction.prompts.REQUIRED_SECTIONS`), or when it repeats its
input instead of summarizing it: it continues the transcript (``[User]:`` lines), most of
its lines are copied from the input, or it loops on the same line. Each problem is a short
phrase; the summarizer quotes them in its stricter retry prompt.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from assistant.compaction.prompts import REQUIRED_SECTIONS
from assistant.compaction.serialize import TRANSCRIPT_MARKERS

#: Share of substantial output lines found verbatim in the input above which it is a copy.
COPY_RATIO = 0.5
MIN_LINE_CHARS = 24


def _norm(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip(" \t-*#>0123456789.[]x")).lower()


def section_present(text: str, name: str) -> bool:
    pattern = r"^\s*(?:#{1,6}\s*|\*\*)?" + re.escape(name).replace(r"\ ", r"\s+")
    return re.search(pattern, text, re.IGNORECASE | re.MULTILINE) is not None


def missing_sections(text: str) -> list[str]:
    return [name for name in REQUIRED_SECTIONS if not section_present(text, name)]


def repeats_input(text: str, source: str) -> str | None:
    """Why ``text`` repeats ``source`` (or loops on itself), or None."""
    if any(marker in text for marker in TRANSCRIPT_MARKERS):
        return "continues the transcript"
    lines = [_norm(line) for line in text.splitlines()]
    substantial = [line for line in lines if len(line) >= MIN_LINE_CHARS]
    if substantial:
        src = _norm(source)
        copied = sum(1 for line in substantial if line in src)
        if copied / len(substantial) > COPY_RATIO:
            return "copies the conversation"
        most = Counter(substantial).most_common(1)[0][1]
        if most >= 3:
            return "repeats itself"
    return None


def validate_summary(
    text: str,
    *,
    source: str,
    budget: int,
    count: Callable[[str], int],
    finish_reason: str = "stop",
) -> list[str]:
    """Problems with ``text`` as a summary of ``source`` (empty list: accepted)."""
    if not text.strip():
        return ["empty"]
    problems: list[str] = []
    if finish_reason == "length":
        problems.append("cut off at the length limit")
    elif finish_reason == "repetition":
        problems.append("stopped: it kept repeating the same line")
    size = count(text)
    if size > budget:
        problems.append(f"{size} tokens over the budget of {budget}")
    missing = missing_sections(text)
    if missing:
        problems.append("missing sections: " + ", ".join(missing))
    why = repeats_input(text, source)
    if why:
        problems.append(why)
    return problems
