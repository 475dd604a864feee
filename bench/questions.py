"""Questions with accepted answers, for the answer benchmark (:mod:`bench.answers`).

A :class:`Question` names the transcript message its answer comes from (``source``, an index
into the transcript's messages after any leading system prompt) and one or more accepted
answers. Two places produce them:

* :func:`workload_questions` derives them from a generated workload's own text: the planted
  facts (:class:`~bench.workloads.Fact`), then facts the user states in passing (W2's
  sentences: "The stale cache is checked every 12 minutes ...", "Mara said the ledger for
  the migration needs 30 more hours", "We agreed to parse each ticket in Oslo ...", "About 40
  percent of the token records are cached"), the constants and defaults of code files read
  earlier, the durations of a build log's steps and the codes and places of a data file's
  items. A key that occurs twice in the transcript (the same sentence subject, the same
  function in one file) is ambiguous and is never asked.
* :func:`load_questions` reads a hand-written ``NAME.questions.json`` next to a real
  session (its user's instructions and decisions, the paths changed, names and numbers from
  files read and commands run).

Scoring (:func:`accepted`): reply and answer are normalized (Unicode NFKC, lower case, quotes,
backticks and asterisks removed, thousands separators dropped, whitespace collapsed) and
the answer must occur in the reply at word boundaries (so "80" does not match "1800"); an
answer ending in a letter may take a plural "s"/"es" ("space" matches "spaces"). Any one of
the alternatives is enough.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from assistant.conversation import Message

from .workloads import Fact

T = TypeVar("T")

#: Characters of the source message kept on each side of the answer (oracle (i)'s passage).
PASSAGE_SIDE = 400


@dataclass(frozen=True)
class Question:
    """One question, its accepted answers and where in the transcript its answer is."""

    id: str
    kind: str
    question: str
    answers: tuple[str, ...]
    #: Index of the source message in the transcript (leading system prompt excluded).
    source: int
    #: Text of the source the answer sits in (the passage is centred on it when given).
    anchor: str = ""
    #: Earlier messages the question also needs (a fact spread over two sessions: "my
    #: sister Ana" in one, "Ana lands at 6:40" in another); oracle (i) gets their text too.
    also: tuple[int, ...] = ()


class QuestionsError(ValueError):
    """A questions file that cannot be used (the message says which entry and why)."""


# -- scoring ------------------------------------------------------------------------------

_STRIP = re.compile(r"[`*\"“”‘’]")
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0](?=\d{3}(?!\d))")


def normalize(text: str) -> str:
    """Lower case, NFKC, no quotes/backticks/asterisks or thousands separators, one space."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = _THOUSANDS.sub("", t)
    t = _STRIP.sub(" ", t)
    return " ".join(t.split())


def _bounded(want: str) -> str:
    """A pattern for ``want`` (lower case) standing alone: at word boundaries, a letter-final
    answer may take a plural."""
    tail = r"(?![0-9])" if want[-1].isdigit() else r"(?:e?s)?(?![a-z0-9])"
    head = r"(?<![a-z0-9])" if want[0].isalnum() else ""
    return head + re.escape(want) + tail


def accepted(reply: str, answers: Sequence[str]) -> bool:
    """Does ``reply`` give one of ``answers`` (see the module docstring)?"""
    got = normalize(reply)
    return any(
        re.search(_bounded(want), got) for want in (normalize(a) for a in answers) if want
    )


# -- message text -------------------------------------------------------------------------


def message_text(msg: Message) -> str:
    """What a message says: its content and its tool calls' arguments."""
    parts = [msg.content]
    parts += [call.arguments_json() for call in msg.tool_calls]
    return "\n".join(p for p in parts if p)


def passage(messages: Sequence[Message], q: Question) -> str:
    """The source message's text around the first accepted answer it contains, after the
    text of the other evidence messages (``q.also``, each cut to the passage's length)."""
    own = _own_passage(messages, q)
    extra = [message_text(messages[i])[: 2 * PASSAGE_SIDE] for i in q.also
             if 0 <= i < len(messages)]
    return "\n\n".join([*extra, own])


def _own_passage(messages: Sequence[Message], q: Question) -> str:
    text = message_text(messages[q.source])
    if len(text) <= 2 * PASSAGE_SIDE:
        return text
    raw = text.lower()
    at = text.find(q.anchor) if q.anchor else -1
    if at < 0:
        at = next((m.start() for a in q.answers if a
                   for m in [re.search(_bounded(a.lower()), raw)] if m), -1)
    if at < 0:  # written differently in the source (e.g. a thousands separator)
        low = normalize(text)
        found = [low.find(normalize(a)) for a in q.answers if normalize(a)]
        hit = next((f for f in found if f >= 0), 0)
        at = hit * len(text) // max(len(low), 1)  # near enough in ``text``
    start = max(0, at - PASSAGE_SIDE)
    return text[start : start + 2 * PASSAGE_SIDE]


def validate(messages: Sequence[Message], questions: Sequence[Question]) -> list[str]:
    """Problems with ``questions`` against the transcript (empty: all usable)."""
    problems: list[str] = []
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            problems.append(f"{q.id}: the id is used twice")
        seen.add(q.id)
        if not 0 <= q.source < len(messages):
            problems.append(f"{q.id}: source {q.source} is not a message of the transcript")
            continue
        if any(not 0 <= i < len(messages) for i in q.also):
            problems.append(f"{q.id}: an 'also' source is not a message of the transcript")
        if not q.answers:
            problems.append(f"{q.id}: no accepted answer")
        elif not accepted(_own_passage(messages, q), q.answers):
            problems.append(f"{q.id}: no accepted answer occurs in its source passage")
    return problems


# -- real sessions: a hand-written file -----------------------------------------------------


def questions_path(session: Path) -> Path:
    return session.with_name(session.stem + ".questions.json")


def load_questions(path: Path) -> list[Question]:
    """Questions from ``NAME.questions.json``: ``{"questions": [{"id", "kind", "question",
    "answers": [...], "source": N, "also": [M, ...]}, ...]}`` (``also``, optional: other
    evidence messages). A malformed entry raises :class:`QuestionsError` naming it."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise QuestionsError(f"{path}: {exc}") from exc
    out: list[Question] = []
    for n, item in enumerate(raw.get("questions", []) if isinstance(raw, dict) else []):
        try:
            out.append(_question(item))
        except (KeyError, TypeError, ValueError) as exc:
            raise QuestionsError(f"{path}: question {n + 1}: {exc!r}") from exc
    if not out:
        raise QuestionsError(f"{path}: no questions (expected {{\"questions\": [...]}})")
    return out


def _question(item: dict[str, Any]) -> Question:
    answers = item["answers"]
    if isinstance(answers, str) or not all(isinstance(a, str) for a in answers):
        raise TypeError("answers must be a list of strings")
    return Question(
        id=str(item["id"]), kind=str(item.get("kind", "fact")), question=str(item["question"]),
        answers=tuple(answers), source=int(item["source"]),
        also=tuple(int(i) for i in item.get("also", ())),
    )


# -- generated workloads: derived from their text ---------------------------------------------

_TOPIC = r"(?:the|our) [a-z ]+?"
_SENTENCES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("checked", re.compile(
        r"The ([a-z]+) ([a-z]+) is checked every (\d+) minutes before we ([a-z]+) it\.")),
    ("hours", re.compile(rf"([A-Z][a-z]+) said the ([a-z]+) for ({_TOPIC}) needs (\d+) more "
                         r"hours\.")),
    ("agreed", re.compile(
        r"We agreed to ([a-z]+) each ([a-z]+) in ([A-Z][a-z]+) once the ([a-z]+) copy is ready\.")),
    ("percent", re.compile(r"About (\d+) percent of the ([a-z]+) records are ([a-z]+)\.")),
)
_CONST = re.compile(r"^(MAX_[A-Z_]+) = (\d+)$", re.M)
_DEF = re.compile(r"^def ([a-z_]+)\(([a-z]+), ([a-z]+)_limit=(\d+)\):\n.*\n"
                  r"    total = len\(\2\) \* (\d+)$", re.M)
_LOG = re.compile(r"^\S+ (?:INFO|WARN|DEBUG) step (\d+): ([a-z ]+?) took (\d+) ms$", re.M)
_ITEM = re.compile(r"^Item (\d+): code (QX-\d+), stored in ([A-Z][a-z]+), batch (\d+)\.$", re.M)


@dataclass
class _Found:
    key: tuple[str, ...]
    kind: str
    question: str
    answers: tuple[str, ...]
    source: int
    anchor: str = ""


def _sentence_questions(text: str, i: int, where: str) -> list[_Found]:
    out: list[_Found] = []
    for kind, pattern in _SENTENCES:
        for m in pattern.finditer(text):
            g = m.groups()
            if kind == "checked":
                out.append(_Found(("checked", g[0], g[1]), "user_number",
                                  f"How often is the {g[0]} {g[1]} checked{where}, in minutes?",
                                  (g[2],), i, m[0]))
            elif kind == "hours":
                out.append(_Found(("hours", g[1], g[2]), "user_number",
                                  f"How many more hours does the {g[1]} for {g[2]} "
                                  f"need{where}?", (g[3],), i, m[0]))
            elif kind == "agreed":
                out.append(_Found(("agreed", g[0], g[1]), "user_decision",
                                  f"In which city did we agree to {g[0]} each {g[1]}{where}?",
                                  (g[2],), i, m[0]))
            else:
                out.append(_Found(("percent", g[1], g[2]), "user_number",
                                  f"What percent of the {g[1]} records are {g[2]}{where}?",
                                  (g[0],), i, m[0]))
    return out


def _file_questions(path: str, body: str, i: int) -> list[_Found]:
    out: list[_Found] = []
    for m in _CONST.finditer(body):
        out.append(_Found(("const", path, m[1]), "file_value",
                          f"In {path}, what is the value of {m[1]}?", (m[2],), i, m[0]))
    for m in _DEF.finditer(body):
        out.append(_Found(("default", path, m[1]), "file_value",
                          f"In {path}, what is the default value of {m[3]}_limit in the "
                          f"function {m[1]}?", (m[4],), i, m[0]))
        out.append(_Found(("factor", path, m[1]), "file_value",
                          f"In {path}, the function {m[1]} multiplies len({m[2]}) by which "
                          "number?", (m[5],), i, m[0]))
    for m in _LOG.finditer(body):
        out.append(_Found(("log", path, m[1]), "file_value",
                          f"In {path}, how many milliseconds did step {m[1]} ({m[2]}) take?",
                          (m[3],), i, m[0]))
    for m in _ITEM.finditer(body):
        out.append(_Found(("code", path, m[1]), "file_value",
                          f"In {path}, what is the code of item {m[1]}?", (m[2],), i, m[0]))
        out.append(_Found(("place", path, m[1]), "file_value",
                          f"In {path}, where is item {m[1]} stored?", (m[3],), i, m[0]))
    out += _sentence_questions(body, i, f" (in {path})")
    return out


def _fact_source(messages: Sequence[Message], fact: Fact) -> int | None:
    probe = fact.probe.lower()
    for i, msg in enumerate(messages):
        if probe in message_text(msg).lower():
            return i
    return None


def workload_questions(
    messages: Sequence[Message], facts: Sequence[Fact], *, limit: int | None = None
) -> list[Question]:
    """Questions about a workload transcript: its planted facts first (those whose answer
    its source message gives), then the facts found in its text (unambiguous keys only),
    spread evenly over the transcript up to ``limit``."""
    planted: list[Question] = []
    for n, fact in enumerate(facts):
        src = _fact_source(messages, fact)
        if src is not None:
            q = Question(f"p{n + 1}", fact.kind, fact.question, fact.answers, src)
            if not validate(messages, [q]):  # its answer is in its source: askable
                planted.append(q)
    found: list[_Found] = []
    for i, msg in enumerate(messages):
        if msg.role == "user":
            found += _sentence_questions(msg.content, i, "")
        elif msg.role == "tool" and msg.content:
            head, _, body = msg.content.partition("\n")
            path = head.split(" (", 1)[0].strip()
            found += _file_questions(path, body, i)
    counts: dict[tuple[str, ...], int] = {}
    for f in found:
        counts[f.key] = counts.get(f.key, 0) + 1
    unique = [f for f in found if counts[f.key] == 1]
    if limit is not None and limit < 2 * len(planted):  # a small run: half of each
        planted = spread(planted, max(1, limit // 2))
    room = len(unique) if limit is None else max(limit - len(planted), 0)
    picked = spread(unique, room)
    derived = [
        Question(f"d{n + 1}", f.kind, f.question, f.answers, f.source, f.anchor)
        for n, f in enumerate(picked)
    ]
    out = planted + derived
    return out if limit is None else out[:limit]


def spread(items: list[T], n: int) -> list[T]:
    """``n`` of ``items`` (in transcript order) at even steps, first and last included."""
    if n <= 0 or not items:
        return []
    if n >= len(items):
        return list(items)
    if n == 1:
        return [items[0]]
    step = (len(items) - 1) / (n - 1)
    return [items[round(k * step)] for k in range(n)]
