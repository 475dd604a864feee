"""Sentences of what the user said that answer a question (for :mod:`.recall`).
More in docs/COMPACTION.md."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

#: Where a sentence ends.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def stem(word: str) -> str:
    """``word`` without a plural or tense ending ("checked", "checks" -> "check")."""
    for end in ("ing", "ed", "s"):
        if word.endswith(end) and len(word) - len(end) >= 3:
            return word[: -len(end)]
    return word


def names(text: str, term: str) -> bool:
    """Whether ``text`` names ``term`` or a form of it ("checked" names "checks", not
    "checklist")."""
    root = stem(term)
    return any(stem(w) == root for w in _WORD.findall(text.lower()))


def best_sentences(
    text: str, terms: Sequence[str], asked: Sequence[str], cost: Callable[[str], int],
    room: int,
) -> str | None:
    """The sentences of ``text`` naming the most of ``terms`` (ties: ``asked``, then
    :func:`pairs`) that fit ``room`` tokens, in order, "..." between; None if none fits."""
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return None
    named = [
        (sum(names(s, t) for t in terms), sum(names(s, t) for t in asked), pairs(s, asked),
         -i, i)
        for i, s in enumerate(sentences)
    ]
    ranked = sorted((n for n in named if n[0] > 0), reverse=True)
    kept: list[int] = []
    for *score, i in ranked:
        if kept and tuple(score[:3]) < ranked[0][:3]:
            break  # only as good as the best: a weaker match is a distractor for a small model
        trial = _join(sentences, sorted([*kept, i]))
        if cost(trial) <= room:
            kept.append(i)
        elif not kept:
            return None
    return _join(sentences, sorted(kept)) if kept else None


def score(text: str, terms: Sequence[str], asked: Sequence[str]) -> tuple[int, int]:
    """How well the best sentence of ``text`` matches: (searched terms, question words)
    it names."""
    roots = [stem(t) for t in terms], [stem(t) for t in asked]
    best = (0, 0)
    for sentence in split_sentences(text):  # each sentence's words stemmed once
        have = {stem(w) for w in _WORD.findall(sentence.lower())}
        best = max(best, (sum(r in have for r in roots[0]), sum(r in have for r in roots[1])))
    return best


def pairs(text: str, asked: Sequence[str]) -> int:
    """How many pairs of neighbouring question words ``asked`` stand side by side in
    ``text`` ("item 85" in "Item 85: code QX-7139", not in "Item 19: ..., batch 85")."""
    words = [stem(w) for w in _WORD.findall(text.lower())]
    found = set(itertools.pairwise(words))
    return sum((stem(a), stem(b)) in found for a, b in itertools.pairwise(asked))


def split_sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.replace("\n", " ").strip()) if s]


def _join(sentences: Sequence[str], kept: Sequence[int]) -> str:
    out: list[str] = []
    for j, i in enumerate(kept):
        if j and i != kept[j - 1] + 1:
            out.append("...")
        out.append(sentences[i])
    return " ".join(out)
