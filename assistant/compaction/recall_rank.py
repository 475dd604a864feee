"""What ranks first among the passages recall found, and how an excerpt's source is written.
More in docs/COMPACTION.md."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from assistant.compaction.file_tracking import call_target
from assistant.compaction.recall_sentences import names, split_sentences, stem
from assistant.conversation import Conversation, Message, ToolCall
from assistant.sessions.recall_index import Hit

#: Words of a question about what the user said, asked or decided.
_SPEAKS_OF_USER = re.compile(
    r"\b(?:did|do|have|had|should|would|could|was|were|am) (?:I|we)\b|\b(?:I|we) "
    r"(?:said|asked|told|gave|wanted|want|suggested|mentioned|wrote|decided|agreed|chose|"
    r"picked|named|called|questioned|stated|gave)\b|\bmy\b",
)
#: Words of a question a number answers.
_WANTS_NUMBER = re.compile(
    r"\bhow (?:many|much|often|long|old|far|big|large)\b|"
    r"\b(?:what|which) (?:percent|percentage|number|version|size|port|year)\b"
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: :func:`.stem`, remembered: :func:`fit` stems every word of forty passages per question.
_stem = functools.lru_cache(maxsize=1 << 16)(stem)
#: A path in a call's header ("data/part_04.txt", "src/a.py", "/home/x/y").
_PATH = re.compile(r"\S*[\w*]\.\w+\b|\S*/\S*")


@dataclass(frozen=True)
class Question:
    """What :func:`fit` needs of the question: its words, and whether a number answers it."""

    asked: Sequence[str]
    number: bool


def wants_number(question: str) -> bool:
    """Whether ``question`` is answered by a number ("How many lines ...?", "How often
    ...?", "What percent ...?")."""
    return _WANTS_NUMBER.search(question.lower()) is not None


def fit(hit: Hit, question: Question) -> float:
    """How well ``hit`` answers ``question`` by its best line or sentence (bm25 alone ranks
    a short passage naming a file before the one holding the answer; docs/RECALL.md)."""
    asked = [_stem(t) for t in question.asked]
    if not asked:
        return 0.0
    wanted = set(asked)
    units = hit.text.split("\n") if "\n" in hit.text.strip() else split_sentences(hit.text)
    unit_words = [[_stem(w) for w in _WORD.findall(u.lower())] for u in units]
    own = wanted & {_stem(w) for w in _WORD.findall(hit.source.lower())}
    # The words of the file a passage came from do not tell its lines apart: a line naming
    # the file again ("# partial_route.txt", a docstring) is not the one that answers.
    # (A file's own: a call on one path, "read_file src/a.py"; a command's output names the
    # paths it was given as its answer, "177 src/a.py".)
    header = hit.source.split()
    target = header[1] if len(header) == 2 and _PATH.fullmatch(header[1]) else ""
    where = {_stem(w) for w in _WORD.findall(target.lower())}
    seen: set[str] = set().union(*(wanted.intersection(words) for words in unit_words))
    numbers = {t for t in question.asked if any(c.isdigit() for c in t)}
    neighbours = list(itertools.pairwise(asked))
    best = 0.0
    for words in unit_words:
        if not words:
            continue
        named = (wanted & set(words)) - where
        pairs = set(itertools.pairwise(words))
        value = float(len(named) + sum((a, b) in pairs and not {a, b} <= where
                                       for a, b in neighbours))
        if question.number and any(w[0].isdigit() and w not in numbers for w in words):
            value += 1
        value += 0.5 * len((seen | own) - named)
        best = max(best, value)
    return best


def speaks_of_user(question: str) -> bool:
    """Whether ``question`` asks about what the user said, asked or decided ("What name did
    I give the branch?", "Which file did I ask you to read?", "What did we agree on?")."""
    return _SPEAKS_OF_USER.search(question) is not None


#: Characters of a command shown in a label, at most.
LABEL_COMMAND_CHARS = 60
#: Path components shown of a long path ("…/core/bash-executor.ts").
PATH_PARTS = 3
_CD_PREFIX = re.compile(r"^cd\s+\S+\s*(?:&&|;)\s*")
_LONG_PATH = re.compile(r"(?<![\w.])[~/]?(?:[\w.@-]+/){" + str(PATH_PARTS) + r",}[\w.@-]+")


def short_target(text: str, limit: int | None = LABEL_COMMAND_CHARS) -> str:
    """A call's target on one line, without ``cd DIR &&``, paths cut to their last
    :data:`PATH_PARTS` parts (an absolute path costs a small model 30 tokens, a fifth of
    recall's budget at 2,048), at most ``limit`` characters."""
    text = _CD_PREFIX.sub("", " ".join(text.split()))

    def cut(m: re.Match[str]) -> str:
        parts = m.group(0).split("/")
        return m.group(0) if len(parts) <= PATH_PARTS else ".../" + "/".join(parts[-PATH_PARTS:])

    text = _LONG_PATH.sub(cut, text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 3].rstrip() + "..."
    return text


def numbered_lines(hit: Hit) -> list[str] | None:
    """The lines of a multi-line passage whose line numbers are exact (None for one line,
    or a call's passage, which starts with its header line: kept whole)."""
    lines = hit.text.split("\n")
    if len(lines) < 2 or hit.last - hit.first + 1 != len(lines) or hit.role == "call":
        return None
    return lines


def best_line(hit: Hit, question: Question) -> int | None:
    """The index of the line of ``hit`` that best answers ``question`` (:func:`fit`)."""
    lines = numbered_lines(hit)
    if lines is None:
        return None
    values = [fit(replace(hit, text=line), question) for line in lines]
    return max(range(len(lines)), key=lambda i: (values[i], -i))


def line_span(hit: Hit, lo: int, hi: int) -> Hit:
    lines = hit.text.split("\n")
    return replace(hit, first=hit.first + lo, last=hit.first + hi,
                   text="\n".join(lines[lo : hi + 1]))


def narrow_lines(hit: Hit, terms: Sequence[str], best: int | None = None) -> Hit | None:
    """The span of lines naming ``terms``, widened to line ``best`` (None: all or none)."""
    lines = numbered_lines(hit)
    if lines is None:
        return None
    named = [i for i, line in enumerate(lines) if any(names(line, t) for t in terms)]
    if best is not None:
        named = sorted({*named, best})
    if not named or (named[0] == 0 and named[-1] == len(lines) - 1):
        return None
    return line_span(hit, named[0], named[-1])


class ChatMap:
    """Where each message sits (position, turn) and where a passage came from, in words;
    updated incrementally (a 10,000-message chat is not walked for every question)."""

    def __init__(self) -> None:
        self._reset(0)

    def _reset(self, conv_id: int) -> None:
        self.conv_id = conv_id
        self.ids: list[str] = []
        self.order: dict[str, int] = {}
        self.turns: dict[str, int] = {}
        self.by_id: dict[str, Message] = {}
        self.calls: dict[str, ToolCall] = {}
        self.turn = 0

    def update(self, conv: Conversation) -> Sequence[Message]:
        """Take in the messages new since the last call; returns them (all of them when the
        conversation is another one or changed other than by appending)."""
        msgs = conv.messages
        n = len(self.ids)
        same = (
            self.conv_id == id(conv) and len(msgs) >= n
            and (n == 0 or (msgs[0].id == self.ids[0] and msgs[n - 1].id == self.ids[-1]))
        )
        if not same:
            self._reset(id(conv))
            n = 0
        new = msgs[n:]
        for i, msg in enumerate(new, start=n):
            if msg.role == "user":
                self.turn += 1
            self.ids.append(msg.id)
            self.order[msg.id] = i
            self.turns[msg.id] = max(self.turn, 1)
            self.by_id[msg.id] = msg
            for call in msg.tool_calls:
                self.calls[call.id] = call
        return new

    def label(self, hit: Hit) -> str:
        """"turn 3, I said", "turn 5, read_file a.py, lines 10-15"."""
        msg = self.by_id[hit.message_id]
        where = f"turn {self.turns.get(hit.message_id, 1)}"
        if hit.role == "call":  # a tool call: its text starts with the tool and its target
            return f"{where}, you called"
        lines = "" if hit.first == hit.last == 1 and "\n" not in msg.content else (
            f", line {hit.first}" if hit.first == hit.last else f", lines {hit.first}-{hit.last}"
        )
        if msg.role == "user":
            return f"{where}, I said{lines}"
        if msg.role == "assistant":  # a fact the assistant stated (:func:`states_fact`)
            return f"{where}, you replied{lines}"
        call = self.calls.get(msg.tool_call_id or "")
        tool = msg.name or (call.name if call else "tool")
        target = call_target(call) if call is not None else None
        return f"{where}, {tool}{' ' + short_target(target.text) if target else ''}{lines}"


#: A number, a time, a date, a name written in capitals inside a sentence or a quoted title
#: ("How about "Harbour Savings"?"): what makes an assistant's sentence worth recalling (it
#: stated, suggested or confirmed a fact), unlike its prose.
_FACT = re.compile(r"\d|(?<=[a-z,;:] )[A-Z][a-z]+|[\"“'‘][A-Z]")


def states_fact(text: str) -> bool:
    """Whether an assistant passage states a fact (numbers, names, dates, decisions it
    stated or confirmed), which recall may bring back behind the user's own words."""
    return _FACT.search(text) is not None
