"""What the user said, kept verbatim through every compaction, shortened only when it must.
More in docs/COMPACTION.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from assistant.compaction.summary.user_text import Kind, Piece, split_user_text
from assistant.compaction.tokens import largest_fitting, truncate_to_tokens

Count = Callable[[str], int]

USER_RECORD_HEADING = "## What the user said (verbatim, oldest first)"
LAST_REQUEST_HEADING = "## Last user request (verbatim)"
TRUNC = " [...truncated]"
#: Sentences longer than this many tokens are clipped before instructions are dropped.
LONG_SENTENCE = 60


# -- the record -----------------------------------------------------------------------------
@dataclass
class _Entry:
    pieces: list[Piece]
    number: int
    size: int = 0

    def text(self) -> str:
        out: list[str] = []
        for i, p in enumerate(self.pieces):
            gap = not p.kept and p.kind != "pasted"
            if gap and i and not self.pieces[i - 1].kept and self.pieces[i - 1].kind != "pasted":
                continue  # one "[...]" for a run of dropped sentences
            out.append(p.shown() + (p.sep if not gap else " "))
        return "".join(out).strip()

    def empty(self) -> bool:
        return not any(p.kept for p in self.pieces)


def _bullet(entry: _Entry) -> str:
    body = entry.text().replace("\n", "\n  ")
    return f"- [{entry.number}] {body}"


def _render(entries: Sequence[_Entry]) -> str:
    """Bullets in order; a run of messages with nothing left is one "omitted" line."""
    lines: list[str] = []
    run: list[int] = []

    def flush() -> None:
        if run:
            span = f"message {run[0]}" if len(run) == 1 else f"messages {run[0]}-{run[-1]}"
            lines.append(f"- [{span} omitted]")
            run.clear()

    for e in entries:
        if e.empty():
            run.append(e.number)
            continue
        flush()
        lines.append(_bullet(e))
    flush()
    return "\n".join(lines)


#: How much a piece pins down: nothing (chatter), a value (a fact), a decision.
Rank = Literal["chatter", "fact", "decision"]
#: A stage of shortening: the kinds it drops, and of what ranks (None: any).
Stage = tuple[tuple[Kind, ...], tuple[Rank, ...] | None]
_UNDECIDED: tuple[Rank, ...] = ("chatter", "fact")
STAGES: tuple[Stage, ...] = (
    (("pasted",), None),
    (("command", "question"), ("chatter",)),
    (("statement",), ("chatter",)),
    (("request",), ("chatter",)),  # "tell me about ...", "what do you think of ...?"
    (("command", "question"), ("fact",)),  # asked about a value: asked and answered
)
#: Then message by message, oldest first: in each, what it asked for (done by now) goes
#: first, then the facts it stated, then its decisions (corrections, confirmations,
#: choices, hedges, "..., right?"), which rank with the instructions.
BY_MESSAGE: tuple[Stage, ...] = (
    (("request",), _UNDECIDED),
    (("command", "question", "statement"), _UNDECIDED),
    (("request", "command", "question", "statement"), ("decision",)),
)
#: Finally the rules, oldest first.
LAST_STAGES: tuple[Stage, ...] = ((("rule",), None),)
#: Chatter (the first stages) keeps only this share of the record's budget; facts and
#: instructions may use all of it. Measured: with the record at 0.4 of the room, all 16
#: must-facts of the real session stay at SmolLM2's 2,048 tokens, and W2 compacts as often
#: as with a 0.3 record.
CHATTER_STAGES = 4
CHATTER_SHARE = 0.75


#: How much a kind weighs when copies of one sentence were classed apart.
_RANK: dict[Kind, int] = {
    "pasted": 0, "command": 1, "question": 2, "statement": 3, "request": 4, "rule": 5,
}


def _in(piece: Piece, stage: Stage) -> bool:
    """Whether ``stage`` drops ``piece``; a repeated instruction or fact is never dropped
    before the last stage (:data:`REPEATS_LAST`)."""
    kinds, rank = stage
    if piece.repeated and stage is not REPEATS_LAST:
        return False
    return piece.kind in kinds and (rank is None or _rank_of(piece) in rank)


def _rank_of(piece: Piece) -> Rank:
    if piece.decision:
        return "decision"
    return "fact" if piece.salient else "chatter"


#: The very last stage: instructions and facts the user said more than once, oldest first.
REPEATS_LAST: Stage = (("rule", "request", "statement", "question", "command", "pasted"), None)


def _merge_repeats(entries: Sequence[_Entry]) -> None:
    """A sentence said again verbatim keeps only its newest copy, at the rank of the most
    important copy; when that is a rule, a decision or a fact it is marked repeated, which
    no stage but the last drops (saying it twice never made it weaker). A request said again
    ("let's discuss this some more", in a message sent twice) asked for something then,
    done by now: raised to the rank of a decision, it is not protected beyond it."""
    copies: dict[str, list[Piece]] = {}
    for e in entries:
        for piece in e.pieces:
            key = " ".join(piece.text.lower().split())
            if len(key) > 12:
                copies.setdefault(key, []).append(piece)
    for same in copies.values():
        if len(same) < 2:
            continue
        last = same[-1]
        for older in same[:-1]:
            older.kept = False
        last.kind = max((p.kind for p in same), key=_RANK.__getitem__)
        last.salient = any(p.salient for p in same)
        last.decision = any(p.decision for p in same)
        last.repeated = last.decision or last.kind == "rule" or (
            last.salient and last.kind != "request"
        )
        # A request said again is raised one rank, to the decisions, but not protected.
        last.decision = last.decision or (last.kind == "request" and last.salient)


def shorten_messages(texts: Sequence[str], budget: int, count: Count) -> str:
    """Bullets of ``texts`` (oldest first) within ``budget`` tokens, shortened stage by
    stage (:data:`STAGES`); "" when nothing fits."""
    if not texts or budget <= 0:
        return ""
    entries = [_Entry(split_user_text(t.strip()), i) for i, t in enumerate(texts, 1)]
    for e in entries:
        e.size = count(_bullet(e)) + 1

    def total() -> int:
        markers = sum(
            1 for i, x in enumerate(entries) if x.empty() and (i == 0 or not entries[i - 1].empty())
        )
        return sum(e.size for e in entries if not e.empty()) + 10 * markers

    def refresh(e: _Entry) -> None:
        e.size = count(_bullet(e)) + 1 if not e.empty() else 0

    if total() > budget:  # a sentence said again: its newest copy, at its highest rank
        _merge_repeats(entries)
        for e in entries:
            refresh(e)

    def drop(stages: Sequence[Stage], within: int = budget) -> None:
        """Drop the pieces of ``stages``, oldest first, until the record fits ``within``."""
        for stage in stages:
            for e in entries:
                if not _drop_in(e, stage, lambda: total() <= within, refresh):
                    return

    def drop_by_message() -> None:
        """:data:`BY_MESSAGE`: the oldest message gives up its pieces first."""
        for e in entries:
            for stage in BY_MESSAGE:
                if not _drop_in(e, stage, lambda: total() <= budget, refresh):
                    return

    if total() > budget:  # shortening: chatter first, down to its share
        drop(STAGES[:CHATTER_STAGES], int(budget * CHATTER_SHARE))
    drop(STAGES[CHATTER_STAGES:])
    if total() > budget:  # clip long instructions, oldest first
        for e in entries:
            for piece in e.pieces:
                if piece.kept and piece.clipped is None and count(piece.text) > LONG_SENTENCE:
                    piece.clipped = _clip(piece.text, LONG_SENTENCE, count)
                    refresh(e)
            if total() <= budget:
                break
    drop_by_message()
    drop((*LAST_STAGES, REPEATS_LAST))  # finally instructions themselves, oldest first
    text = _render(entries)
    while text and count(text) > budget:
        # The joined text can count a few tokens more than its bullets: the next piece in
        # the same order goes (never a whole message: the oldest holds the ground rules).
        if not _drop_next(entries):
            return ""
        text = _render(entries)
    return text


def _drop_in(
    entry: _Entry, stage: Stage, fits: Callable[[], bool], refresh: Callable[[_Entry], None]
) -> bool:
    """Drop ``entry``'s pieces of ``stage`` in order until ``fits``; False once it fits."""
    for piece in entry.pieces:
        if fits():
            return False
        if piece.kept and _in(piece, stage):
            piece.kept = False
            refresh(entry)
    return not fits()


def _drop_next(entries: Sequence[_Entry]) -> bool:
    """Drop the first kept piece in the order of the stages (which name every kind);
    False when nothing is left."""
    by_message = [(e, stage) for e in entries for stage in BY_MESSAGE]
    in_order = [
        *((e, stage) for stage in STAGES for e in entries), *by_message,
        *((e, stage) for stage in (*LAST_STAGES, REPEATS_LAST) for e in entries),
    ]
    for e, stage in in_order:
        for piece in e.pieces:
            if piece.kept and _in(piece, stage):
                piece.kept = False
                return True
    return False


def _clip(text: str, limit: int, count: Count) -> str:
    """The longest word-boundary prefix of ``text`` with the marker within ``limit``
    (by characters when not even one word fits; "" when not even that does)."""
    words = text.split(" ")
    if count(words[0] + TRUNC) > limit:
        return truncate_to_tokens(text, limit, count, TRUNC)
    fit = largest_fitting(lambda k: " ".join(words[:k]) + TRUNC, len(words), limit, count)
    return " ".join(words[:fit]) + TRUNC


def render_user_record(
    messages: Sequence[str], budget: int, count: Count, *, last_request: str | None
) -> str:
    """The record's user sections within ``budget`` tokens: ``messages`` oldest first, and
    ``last_request`` (when not visible after the summary) whole unless it alone is too big."""
    if budget <= 0:
        return ""
    parts: list[str] = []
    left = budget
    last = ""
    if last_request:
        head = LAST_REQUEST_HEADING + "\n"
        room = left - count(head)
        body = last_request.strip()
        if count(body) > room:
            # Shortened like an older message (pasted material first), else clipped.
            bullet = "- [1] "
            short = shorten_messages([body], room + count(bullet), count)
            body = short[len(bullet) :] if short.startswith(bullet) else ""
            if not body or count(body) > room:
                body = _clip(body or last_request.strip(), room, count) if room >= 8 else ""
        if body:
            last = head + body
            left -= count(last) + 2
    if messages and left > 24:
        body = shorten_messages(messages, left - count(USER_RECORD_HEADING) - 2, count)
        if body:
            parts.append(USER_RECORD_HEADING + "\n" + body)
    if last:
        parts.append(last)
    return "\n\n".join(parts)
