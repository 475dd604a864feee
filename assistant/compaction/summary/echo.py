"""Phrases of our own summary prompts copied into a model's summary, found and cut out.
More in docs/COMPACTION.md."""

from __future__ import annotations

import re
from functools import cache

from assistant.compaction.summary import prompts

#: Words this long in a row, copied from a prompt, are an echo.
SHINGLE = 4
#: An echoed run of words holds one of these: words about the summarizer's task or its reader
#: ("in your own words", "one or two short bullets"), never a chat's plain words ("the user
#: is trying to").
_TASK_WORDS = frozenset((
    "you", "your", "yourself", "heading", "headings", "bullet", "bullets", "summary",
    "summaries", "summarize", "sentence", "sentences", "words", "format", "conversation",
    "transcript", "facts", "brief", "matters", "rejected",
))
_TOKEN = re.compile(r"[A-Za-z0-9#']+")
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")
#: A limit stated the way our prompts state one: "at most 40 words", "no more than 5
#: sentences" (a limit the chat itself names, "10 lines", is the chat's and stays).
_LIMIT = re.compile(
    r"\b(?:at most|no more than|not more than|up to|fewer than|less than|under|within)\s+"
    r"(\d+|#)\s+(words|sentences|bullets|lines|tokens|characters)\b",
    re.IGNORECASE,
)


def _norm(word: str) -> str:
    word = word.lower().strip("'")
    return "#" if any(c.isdigit() for c in word) else word


def _prompt_texts() -> list[str]:
    """The text of every prompt constant (and of the facts' titles) in :mod:`.prompts`."""
    texts: list[str] = []
    for name, value in vars(prompts).items():
        if not name.lstrip("_").isupper():
            continue
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            texts.extend(v for v in value.values() if isinstance(v, str))
    return [_PLACEHOLDER.sub(" # ", t) for t in texts]


@cache
def prompt_shingles() -> frozenset[tuple[str, ...]]:
    """Every run of :data:`SHINGLE` words of our prompts that names the summarizer's task."""
    out: set[tuple[str, ...]] = set()
    for text in _prompt_texts():
        words = [_norm(w) for w in _TOKEN.findall(text)]
        for i in range(len(words) - SHINGLE + 1):
            gram = tuple(words[i : i + SHINGLE])
            if _TASK_WORDS.intersection(gram):
                out.add(gram)
    return frozenset(out)


def cut_echoes(line: str, chat: str) -> tuple[str, list[str]]:
    """(``line`` without the phrases copied from our prompts, the phrases cut). ``chat``: the
    summarized text, lower-cased and with single spaces; a phrase the chat itself holds is
    the chat's and stays."""
    spans: list[tuple[int, int]] = []
    tokens = list(_TOKEN.finditer(line))
    words = [_norm(m.group(0)) for m in tokens]
    shingles = prompt_shingles()
    for i in range(len(words) - SHINGLE + 1):
        if tuple(words[i : i + SHINGLE]) in shingles:
            spans.append((tokens[i].start(), tokens[i + SHINGLE - 1].end()))
    for m in _LIMIT.finditer(line):
        if f"{m.group(1)} {m.group(2)}".lower() not in chat:
            spans.append((m.start(), m.end()))
    if not spans:
        return line, []
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    cut = [line[a:b] for a, b in merged if line[a:b].lower() not in chat]
    if not cut:
        return line, []
    out = line
    for piece in cut:
        out = out.replace(piece, " ", 1)
    out = re.sub(r"\s+([,.;:!?)])", r"\1", re.sub(r"\s{2,}", " ", out))
    return out.strip(" ,;:-("), cut
