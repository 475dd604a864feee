"""Recall at question time: excerpts of the whole chat placed next to the latest question.
More in docs/COMPACTION.md."""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from assistant.compaction.recall_rank import (
    ChatMap,
    Question,
    best_line,
    fit,
    line_span,
    narrow_lines,
    short_target,
    speaks_of_user,
    states_fact,
    wants_number,
)
from assistant.compaction.recall_replies import fitted, replies_beside
from assistant.compaction.recall_sentences import best_sentences, score, split_sentences
from assistant.compaction.tokens import TokenCounter
from assistant.config import EffectivePolicy
from assistant.conversation import Conversation, Message
from assistant.llm.transcript_recall import HEADING_AFTER, HEADING_BEFORE
from assistant.sessions.recall_index import Hit, IndexUnavailable, message_rows
from assistant.sessions.recall_text import match_expression, normalize, query_terms

log = logging.getLogger("assistant.compaction.recall")

Placement = Literal["before", "after"]

#: Passages asked of the index per query (before filtering).
SEARCH_LIMIT = 40
#: Excerpts in one block, at most.
MAX_EXCERPTS = 4
#: A passage is kept when its BM25 score is at least this share of the best one's.
RELATIVE_SCORE = 0.35
#: A term in more than this share of the chat's passages (and more than COMMON_MIN of them)
#: is not searched for.
COMMON_SHARE = 0.03
COMMON_MIN = 6
#: Words of a pair searched for may be this many tokens apart ("cache is checked").
NEAR_TOKENS = 4
#: Passages of the latest message itself holding its own words (it is indexed too).
OWN = 1
#: Pairs searched for at most (the rarest).
MAX_PAIRS = 6
#: Weight of the bm25 score of an earlier question of the user: it shares the new one's
#: words and is short, so bm25 ranks it first, yet it holds no answer.
QUESTION_WEIGHT = 0.5
#: An excerpt whose :func:`fit` is below this share of the best one's is left out: a small
#: model answers from an unrelated line beside the answer's (docs/ANSWERS.md).
FIT_SHARE = 0.5
#: Weight of the bm25 score of the user's own words when the question asks what the user
#: said (:func:`speaks_of_user`).
USER_WEIGHT = 2.0
#: A budget smaller than this brings nothing back (one excerpt and its label need more).
MIN_BUDGET = 40


class PassageIndex(Protocol):
    """One chat's full-text index (see :class:`assistant.sessions.recall_index.RecallIndex`)."""

    def sync(self, messages: Sequence[Message]) -> int: ...

    def search(self, expression: str, *, limit: int) -> Sequence[Hit]: ...

    def counts(self, terms: Sequence[str]) -> dict[str, int]: ...

    def matching(self, expressions: Sequence[str]) -> dict[str, int]: ...

    def distrust(self, reason: str) -> None: ...

    @property
    def passages(self) -> int: ...


IndexFor = Callable[[Conversation], "PassageIndex | None"]
#: The prompt's messages as the call will show them beside excerpts (see :meth:`Recall.apply`).
Shown = Callable[[Sequence[dict[str, Any]]], Sequence[dict[str, Any]]]


@dataclass(frozen=True)
class Excerpt:
    message_id: str
    label: str
    text: str


@dataclass(frozen=True)
class RecallBlock:
    """What was added to the latest user message, and its tokens (counted alone)."""

    text: str
    excerpts: tuple[Excerpt, ...]
    tokens: int
    message_id: str


def recall_budget(policy: EffectivePolicy) -> int:
    """Tokens recall may add: a twentieth of the window, at most 2,048."""
    return max(MIN_BUDGET, min(policy.window // 20, 2_048))


def recall_room(policy: EffectivePolicy, prompt_tokens: int) -> int:
    """Room beside the prompt: the window less the prompt and 3/4 of the reserve (a reply
    rarely needs all of it)."""
    return policy.window - prompt_tokens - (policy.reserve * 3) // 4


def distinctive(terms: Sequence[str], index: PassageIndex) -> list[str]:
    """``terms`` less those common in this chat (noise the model would imitate); the latest
    message's own passage is not counted."""
    limit = max(COMMON_MIN, int(index.passages * COMMON_SHARE))
    return [t for t, n in index.counts(terms).items() if 0 < n - OWN <= limit]


def distinctive_pairs(terms: Sequence[str], index: PassageIndex) -> list[str]:
    """FTS5 ``NEAR`` expressions for the question's neighbouring pairs found in this chat,
    the rarest first: for a question whose every word is common here."""
    pairs = [
        f'NEAR("{a.replace(chr(34), "")}" "{b.replace(chr(34), "")}", {NEAR_TOKENS})'
        for a, b in itertools.pairwise(terms)
    ]
    found = sorted((n, e) for e, n in index.matching(pairs).items() if n - OWN > 0)
    return [e for _n, e in found[:MAX_PAIRS]]


def ranked_expression(terms: Sequence[str], asked: Sequence[str]) -> str:
    """``(terms) AND (asked words OR neighbouring pairs)``: the distinctive ``terms`` select,
    all the question's words rank (bm25 sums over every phrase). "" for no terms."""
    if not terms:
        return ""
    expression = match_expression(list(terms))
    phrases = [
        '"' + f"{a} {b}".replace('"', '""') + '"' for a, b in itertools.pairwise(asked)
    ]
    if set(terms) == set(asked) and not phrases:
        return expression
    ranking = " OR ".join([match_expression(list(asked)), *phrases])
    return f"({expression}) AND ({ranking})"


class Recall:
    """Finds and places the excerpts; ``index_for`` gives a conversation's index, or None."""

    def __init__(
        self, counter: TokenCounter, index_for: IndexFor, *, placement: Placement = "before"
    ) -> None:
        self.counter = counter
        self.index_for = index_for
        self.placement: Placement = placement
        self._last: tuple[tuple[int, str, int], RecallBlock | None] | None = None
        self._chat = ChatMap()
        self._synced: PassageIndex | None = None

    def apply(
        self, conv: Conversation, messages: list[dict[str, Any]], budget: int,
        kept: Sequence[Message], shown: Shown | None = None,
    ) -> RecallBlock | None:
        """Put the block into ``messages`` (the prompt as built from ``conv``) and return it,
        or None; a failing index is logged. ``shown``: what the call will show of
        ``messages`` beside excerpts; a passage is "visible" only where it is still there."""
        at = next((i for i in range(len(kept) - 1, -1, -1) if kept[i].role == "user"), None)
        if at is None or budget < MIN_BUDGET:
            return None
        latest = kept[at]
        offset = len(messages) - len(kept)
        pos = offset + at
        if offset < 1 or messages[pos].get("content") != latest.content:
            return None  # not the prompt of this conversation as built
        key = (id(conv), latest.id, len(conv.compactions))
        if self._last is not None and self._last[0] == key:
            block = self._last[1]
            if block is not None and block.tokens > budget:
                block = self.find(conv, latest, messages, pos, budget, shown)
        else:
            block = self.find(conv, latest, messages, pos, budget, shown)
        self._last = (key, block)
        if block is None:
            return None
        original = str(messages[pos].get("content") or "")
        content = (
            f"{block.text}\n\n{original}" if self.placement == "before"
            else f"{original}\n\n{block.text}"
        )
        messages[pos] = {**messages[pos], "content": content}
        return block

    @contextlib.contextmanager
    def previewing(self, chat: Conversation, trial: Conversation) -> Iterator[None]:
        """While the block runs, excerpts for ``trial`` (``chat`` with a draft as its new
        message: the read-ahead) come from ``chat``'s index, which takes in none of
        ``trial``'s own messages (the draft is never indexed; ``chat``'s are at its next
        call), and this recall's memo is left as it was."""
        saved = (self._last, self._chat, self._synced, self.index_for)
        real = self.index_for
        own = {m.id for m in chat.messages}

        def index_for(conv: Conversation) -> PassageIndex | None:
            index = real(chat if conv is trial else conv)
            return None if index is None or conv is not trial else _ReadOnly(index, own)

        self._last, self._chat, self._synced, self.index_for = None, ChatMap(), None, index_for
        try:
            yield
        finally:
            self._last, self._chat, self._synced, self.index_for = saved

    def find(
        self, conv: Conversation, latest: Message, messages: Sequence[dict[str, Any]],
        pos: int, budget: int, shown: Shown | None = None,
    ) -> RecallBlock | None:
        """The block for ``latest`` within ``budget`` tokens, or None."""
        asked = query_terms(latest.content)
        terms = asked
        if not terms:
            return None
        chat = self._chat
        new = chat.update(conv)
        try:
            index = self.index_for(conv)
            if index is None:
                return None
            if index is not self._synced:  # another index: bring it up to date whole
                new = conv.messages
            index.sync(new)
            self._synced = index
            terms = distinctive(terms, index)
            expression = ranked_expression(terms, asked)
            fallback = not terms
            if fallback:  # every word is common here: pairs of them are rarer
                expression = " OR ".join(distinctive_pairs(asked, index))
                terms = asked
            hits = index.search(expression, limit=SEARCH_LIMIT) if expression else []
        except IndexUnavailable as exc:  # locked elsewhere, or damaged (being rebuilt)
            log.info("Recall skipped: %s", exc)
            self._synced = None
            return None
        except Exception:  # recall is an aid: a broken index must not stop the reply
            log.warning("Recall skipped: the chat's index failed", exc_info=True)
            self._synced = None
            return None
        hits = genuine(hits, chat, index)
        if not hits:
            return None
        visible = _visible(messages, pos, shown)
        hits = [
            h for h in hits
            if h.message_id != latest.id and h.message_id in chat.order
            and (h.role != "assistant" or states_fact(h.text))
            and (normalize(h.text) not in visible or self._focusable(h))
        ]
        if not hits:
            return None
        mine = speaks_of_user(latest.content)
        weighted = {id(h): _weighted(h, mine) for h in hits}
        best = min(weighted.values())
        # Among the passages bm25 found, the one with a line naming the most of the
        # question's words first (:func:`fit`); bm25 orders those alike.
        question = Question(asked, wants_number(latest.content))
        # An earlier question of the user comes back only when nothing else does: beside the
        # passage that answers, a small model copies it ("- (turn 2, I said) In a.txt, what
        # is the code of item 94?" as its answer, measured on W5).
        fits = {id(h): fit(h, question) for h in hits}
        # The assistant's own statements rank behind the user's words and the files.
        hits.sort(key=lambda h: (_asks(h), h.role == "assistant", -fits[id(h)],
                                 weighted[id(h)]))
        top_fit = {asks: max((fits[id(h)] for h in hits if _asks(h) == asks), default=0.0)
                   for asks in (False, True)}
        # What the user said comes back only where it answers as well as the best of it: a
        # sentence naming fewer of the question's words is a distractor ("the ticket records
        # are secondary" beside "... are final").
        scores = {id(h): score(h.text, terms, asked) for h in hits if self._focusable(h)}
        top = max(scores.values(), default=(0, 0))
        heading = HEADING_BEFORE if self.placement == "before" else HEADING_AFTER
        used = self.counter.text(heading) + 2
        chosen: list[tuple[int, int, Excerpt]] = []
        seen: set[str] = set()
        for hit in hits:
            if len(chosen) >= MAX_EXCERPTS:
                break
            if best < 0 and weighted[id(hit)] > best * RELATIVE_SCORE:
                continue  # too weak a match
            if _asks(hit) and chosen:
                break
            if fits[id(hit)] < top_fit[_asks(hit)] * FIT_SHARE:
                continue  # it names far fewer of the question's words than the best
            key = _same_key(hit)
            if not key or key in seen:
                continue
            excerpt = Excerpt(hit.message_id, chat.label(hit), _shown_text(hit))
            cost = self.counter.text(_line(excerpt)) + 1
            if id(hit) in scores and (scores[id(hit)] < top or (fallback and top[1] < 2)):
                continue  # weaker; or common words, and no sentence names two of them
            focused = None
            if self._focusable(hit):  # the sentences that answer, not the rest
                focused = best_sentences(
                    hit.text, terms, asked, lambda t: self.counter.text(t) + 1, budget - used
                )
                if focused is not None:
                    excerpt = Excerpt(hit.message_id, excerpt.label, focused)
                    cost = self.counter.text(_line(excerpt)) + 1
                elif normalize(hit.text) in visible:
                    continue  # still in the prompt and nothing to focus on
            room = budget - used
            share = room if focused is not None else min(room, budget // 2)
            if cost > share:  # too long: its lines, else sentences, naming a term; one
                # excerpt takes at most half the budget when that is enough for its lines
                # (four lines of indented code must not leave no room for the answer)
                narrowed = self._narrowed(hit, terms, asked, chat, share, question)
                if narrowed is None and cost > room:
                    narrowed = self._narrowed(hit, terms, asked, chat, room, question)
                    if narrowed is None:
                        continue
                if narrowed is not None:
                    excerpt, cost = narrowed
            used += cost
            seen.add(key)
            chosen.append((chat.order[hit.message_id], hit.first, excerpt))
        chosen += self._replies([c[2] for c in chosen], chat, conv, asked, visible, budget - used)
        if not chosen:
            return None
        excerpts = tuple(e for _, _, e in sorted(chosen, key=lambda c: (c[0], c[1])))
        text = heading + "\n" + "\n".join(_line(e) for e in excerpts)
        return RecallBlock(text, excerpts, self.counter.text(text), latest.id)

    def _replies(
        self, chosen: Sequence[Excerpt], chat: ChatMap, conv: Conversation,
        asked: Sequence[str], visible: str, room: int,
    ) -> list[tuple[int, int, Excerpt]]:
        """The assistant's sentences beside the recalled user messages, in the room the
        chosen excerpts left (:mod:`.recall_replies`: behind the user's words)."""
        def excerpt(msg: Message, sentence: str) -> Excerpt:
            line = next((i for i, t in enumerate(msg.content.split("\n"), 1)
                         if sentence[:20] in t), 1)
            hit = Hit(msg.id, "assistant", line, line, sentence, 0.0)
            return Excerpt(msg.id, chat.label(hit), sentence)

        found = replies_beside(chosen, conv.messages, chat.order, asked, visible)
        fits = fitted(found, lambda m, s: _line(excerpt(m, s)),
                      lambda t: self.counter.text(t) + 1, room)
        return [(chat.order[m.id], 0, excerpt(m, s)) for m, s, _cost in fits]

    def _focusable(self, hit: Hit) -> bool:
        """Whether ``hit`` is the user's, in several sentences: it comes back as its sentences
        naming the question's words, also when still in the prompt (a small model misses a
        fact in the middle of a long prompt; measured: docs/ANSWERS.md)."""
        return hit.role == "user" and len(split_sentences(hit.text)) > 1

    def _narrowed(
        self, hit: Hit, terms: Sequence[str], asked: Sequence[str], chat: ChatMap,
        room: int, question: Question,
    ) -> tuple[Excerpt, int] | None:
        """``hit`` cut to ``room`` tokens, with its cost: the lines naming a term, else its
        best line, else that line's best sentences; None when nothing fits."""
        best = best_line(hit, question)
        narrow = narrow_lines(hit, terms, best)
        for cut in (narrow, None if best is None else line_span(hit, best, best)):
            if cut is not None:
                excerpt = Excerpt(hit.message_id, chat.label(cut), cut.text)
                cost = self.counter.text(_line(excerpt)) + 1
                if cost <= room:
                    return excerpt, cost
        source = narrow if narrow is not None else hit
        label = chat.label(source)
        base = self.counter.text(_line(Excerpt(hit.message_id, label, ""))) + 1
        picked = None
        # The searched terms first; a passage found by its file's name (the ``source``
        # column) names none of them in its text: then the question's words choose the line.
        for words in (terms, asked):
            picked = best_sentences(
                source.text, words, asked, lambda t: self.counter.text(t) + 1, room - base
            )
            if picked is not None:
                break
        if picked is None:
            return None
        excerpt = Excerpt(hit.message_id, label, picked)
        cost = self.counter.text(_line(excerpt)) + 1
        return (excerpt, cost) if cost <= room else None


def genuine(hits: Sequence[Hit], chat: ChatMap, index: PassageIndex) -> list[Hit]:
    """The ``hits`` that are passages of this branch's messages exactly as the chat file holds
    them; any other passage of a message here (text edited inside the index file) is left
    out and the index is distrusted (rebuilt). Passages of other branches' messages are left
    out without blame (the index holds every branch)."""
    rows: dict[str, set[tuple[str, str, int, int]]] = {}
    out: list[Hit] = []
    forged = 0
    for hit in hits:
        msg = chat.by_id.get(hit.message_id)
        if msg is None:
            continue
        if msg.id not in rows:
            rows[msg.id] = {(r[0], r[3], r[4], r[5]) for r in message_rows(msg, chat.calls)}
        if (hit.text, hit.role, hit.first, hit.last) in rows[msg.id]:  # (source only ranks)
            out.append(hit)
        else:
            forged += 1
    if forged:
        index.distrust(f"{forged} passage(s) found differ from the chat file")
    return out


class _ReadOnly:
    """A chat's index read for a draft it does not hold: ``sync`` takes in only messages of
    the chat itself, and the counts are those the draft's own passage would add once sent
    (it holds every word it asks; :data:`OWN` is taken off them). The bm25 ranking is
    without it, a difference only in the excerpts' order where two score alike."""

    def __init__(self, index: PassageIndex, own: set[str]) -> None:
        self._index = index
        self._own = own

    def sync(self, messages: Sequence[Message]) -> int:
        return self._index.sync([m for m in messages if m.id in self._own])

    def search(self, expression: str, *, limit: int) -> Sequence[Hit]:
        return self._index.search(expression, limit=limit)

    def counts(self, terms: Sequence[str]) -> dict[str, int]:
        return {t: n + OWN for t, n in self._index.counts(terms).items()}

    def matching(self, expressions: Sequence[str]) -> dict[str, int]:
        return {e: n + OWN for e, n in self._index.matching(expressions).items()}

    def distrust(self, reason: str) -> None:
        self._index.distrust(reason)

    @property
    def passages(self) -> int:
        return self._index.passages + OWN


def _visible(messages: Sequence[dict[str, Any]], pos: int, shown: Shown | None) -> str:
    """The prompt's text the call shows, less the latest user message, normalized."""
    view, latest = messages, pos
    if shown is not None:
        view = shown(messages)
        latest = max((i for i, m in enumerate(view) if m.get("role") == "user"), default=-1)
    return normalize("\n".join(str(m.get("content") or "") for i, m in enumerate(view)
                                if i != latest))


def _same_key(hit: Hit) -> str:
    """Two passages are one excerpt when this matches: a call's header left out (a file
    written, then read back)."""
    text = hit.text.partition("\n")[2] if hit.role == "call" and "\n" in hit.text else hit.text
    return normalize(text)


def _shown_text(hit: Hit) -> str:
    """``hit``'s text as an excerpt shows it (a call's header shortened)."""
    if hit.role != "call":
        return hit.text
    header, sep, body = hit.text.partition("\n")
    tool, _, target = header.partition(" ")
    return f"{tool} {short_target(target, None)}".rstrip() + sep + body


def _weighted(hit: Hit, mine: bool = False) -> float:
    """``hit``'s bm25 rank (lower first), an earlier question's weighted down, the user's up
    when the question asks what the user said (``mine``)."""
    rank = hit.rank * USER_WEIGHT if mine and hit.role == "user" else hit.rank
    return rank * QUESTION_WEIGHT if _asks(hit) else rank


def _asks(hit: Hit) -> bool:
    """Whether ``hit`` is an earlier question of the user."""
    return hit.role == "user" and hit.text.rstrip().endswith("?")


def _line(excerpt: Excerpt) -> str:
    # The transcript form parses this (:func:`assistant.llm.transcript_recall.split_block`).
    body = excerpt.text.strip().replace("\n", "\n  ")
    return f"- ({excerpt.label}) {body}"
