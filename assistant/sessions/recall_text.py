"""Text rules of recall: passages of a few lines (numbered as the file is for ``read_file``),
a question's search terms (stop and chat words dropped) as a quoted FTS5 ``OR`` query, and
:func:`normalize`, the form "already visible verbatim" is checked in."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Lines per passage of a multi-line message or tool output.
WINDOW_LINES = 6
#: Longest passage, in characters (a long line is cut into pieces of at most this).
MAX_PASSAGE_CHARS = 480
#: At most this many terms are searched for (the first ones of the question).
MAX_TERMS = 24

_READ_HEADER = re.compile(r"^.+ \((?:[\d,]+ lines|lines (?P<start>[\d,]+)-[\d,]+ of [\d,]+)\)$")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_TERM = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_SPACE = re.compile(r"\s+")

_STOP = """a about above after again against all also am an and any are aren't as at be
because been before being below between both but by can can't cannot could couldn't did didn't
do does doesn't doing don't down during each few for from further had hadn't has hasn't have
haven't having he her here hers herself him himself his how i i'd i'll i'm i've if in into is
isn't it it's its itself just let's me more most my myself no nor not now of off on once only
or other ought our ours ourselves out over own same she should shouldn't so some such than that
that's the their theirs them themselves then there there's these they they're this those
through to too under until up very was wasn't we we're we've were weren't what what's when
where which while who whom why will with won't would wouldn't you you'd you'll you're you've
your yours yourself yourselves
tell remind again earlier said say says mentioned mention told please thanks thank ok okay
yes yeah sure know think remember recall answer question exactly actually really just also
one ever anything something everything hi hello hey still already like get got us"""
#: Words that say nothing about which passage answers: function words, question words and
#: the words people use to ask for something said before.
STOP_WORDS: frozenset[str] = frozenset(_STOP.split())


@dataclass(frozen=True)
class Passage:
    """A few lines of one message, ``first``..``last`` (1-based; the file's for ``read_file``)."""

    first: int
    last: int
    text: str


def _pieces(line: str) -> list[str]:
    """``line`` cut at sentence ends (else spaces, else anywhere) into short pieces."""
    if len(line) <= MAX_PASSAGE_CHARS:
        return [line]
    out: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(line.strip()):
        if not sentence:
            continue
        while len(sentence) > MAX_PASSAGE_CHARS:  # one overlong sentence: at a space
            cut = sentence.rfind(" ", 0, MAX_PASSAGE_CHARS)
            cut = cut if cut > MAX_PASSAGE_CHARS // 2 else MAX_PASSAGE_CHARS
            if current:
                out.append(current)
                current = ""
            out.append(sentence[:cut].rstrip())
            sentence = sentence[cut:].lstrip()
        if current and len(current) + 1 + len(sentence) > MAX_PASSAGE_CHARS:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        out.append(current)
    return [p for p in out if p.strip()]


def split_passages(text: str, *, tool: str | None = None) -> list[Passage]:
    """``text`` as passages in order (blank-only windows are skipped)."""
    lines = text.split("\n")
    offset = 0  # file line number = output line index + offset
    if tool == "read_file" and lines:
        header = _READ_HEADER.match(lines[0].strip())
        if header is not None:
            start = int((header.group("start") or "1").replace(",", ""))
            lines = lines[1:]
            offset = start - 1
    out: list[Passage] = []
    window: list[str] = []
    first = 0
    chars = 0

    def flush(last: int) -> None:
        # Blank lines at the window's edges are left out, and its numbers say so: a
        # passage's lines are exactly lines ``first``..``last`` (recall narrows it by line).
        lo, hi = 0, len(window)
        while lo < hi and not window[lo].strip():
            lo += 1
        while hi > lo and not window[hi - 1].strip():
            hi -= 1
        if lo < hi:
            body = "\n".join(window[lo:hi])
            out.append(Passage(first + lo + offset, last - (len(window) - hi) + offset, body))
        window.clear()

    for i, line in enumerate(lines, start=1):
        pieces = _pieces(line)
        if len(pieces) > 1:  # a long line: its own passages, one per piece
            if window:
                flush(i - 1)
            out.extend(Passage(i + offset, i + offset, p) for p in pieces)
            chars = 0
            continue
        if window and (len(window) >= WINDOW_LINES or chars + len(line) > MAX_PASSAGE_CHARS):
            flush(i - 1)
            chars = 0
        if not window:
            first = i
        window.append(line)
        chars += len(line) + 1
    if window:
        flush(len(lines))
    return out


def query_terms(text: str) -> list[str]:
    """The words and numbers of ``text`` worth searching for, in order, each once."""
    seen: list[str] = []
    for match in _TERM.finditer(text.lower()):
        word = match.group(0).replace("’", "'")
        if word in STOP_WORDS or word in seen:
            continue
        if len(word) < 2 and not word.isdigit():
            continue
        seen.append(word.split("'")[0] if word.endswith(("'s", "'t")) else word)
        if len(seen) >= MAX_TERMS:
            break
    return [w for w in dict.fromkeys(seen) if w and w not in STOP_WORDS]


def match_expression(terms: list[str]) -> str:
    """An FTS5 query matching any of ``terms`` ("" for none)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def normalize(text: str) -> str:
    """Lowercase, whitespace collapsed: the form "visible verbatim" is checked in."""
    return _SPACE.sub(" ", text).strip().lower()
