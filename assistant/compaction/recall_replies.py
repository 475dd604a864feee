"""The assistant's words beside a recalled user message (for :mod:`.recall`).

A fact the assistant stated is often found only next to the user's words it answered: a
date it worked out ("the day after tomorrow" -> "The meeting is on Monday 10 March"), a name
it suggested that the user accepted ("How about "Harbour Savings"?" - "I love it, we will
use that name."). The question names the user's words, not the assistant's, so the search
finds the user's message and recall brought back only that. Measured on the answer
benchmark's personal chats (docs/ANSWERS.md): 1 of 5 such facts reached the prompt.

Here, after the user's excerpts are chosen, the assistant message right after a recalled
user message (its reply), and the one right before a short user message (what the user
answered), come back as their best sentence, behind the user's words (only in the room the
user's excerpts left). More in docs/COMPACTION.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from assistant.compaction.recall_rank import states_fact
from assistant.compaction.recall_sentences import names, split_sentences
from assistant.conversation import Message, valid_text
from assistant.sessions.recall_text import normalize

#: Recalled user messages (the best first) whose neighbouring replies are looked at.
REPLIED_MESSAGES = 2
#: A user message of at most this many words answers the reply before it ("Perfect, I will
#: order that this week."); a longer one stands on its own.
SHORT_ANSWER_WORDS = 14

Cost = Callable[[str], int]


class Chosen(Protocol):
    """What recall chose: a message's id (``message_id``)."""

    @property
    def message_id(self) -> str: ...


def replies_beside(
    chosen: Sequence[Chosen], messages: Sequence[Message], order: dict[str, int],
    asked: Sequence[str], visible: str,
) -> list[tuple[Message, str]]:
    """The assistant messages beside the first :data:`REPLIED_MESSAGES` recalled user
    messages of ``chosen`` (in rank order), each with its sentence to show: the reply after
    the user's message, then the reply before it when the user's message is short. A reply
    already chosen, still in the prompt (``visible``, normalized), or without a sentence
    that names a question word or states a fact (:func:`reply_sentence`) is left out."""
    taken = {c.message_id for c in chosen}
    out: list[tuple[Message, str]] = []
    users = [order[c.message_id] for c in chosen
             if c.message_id in order and messages[order[c.message_id]].role == "user"]
    for at in users[:REPLIED_MESSAGES]:
        short = len(messages[at].content.split()) <= SHORT_ANSWER_WORDS
        for near in (at + 1, at - 1) if short else (at + 1,):
            if not 0 <= near < len(messages):
                continue
            msg = messages[near]
            if msg.role != "assistant" or msg.tool_calls or msg.id in taken:
                continue
            if normalize(msg.content) in visible:
                continue
            sentence = reply_sentence(msg.content, asked)
            if sentence is not None:
                taken.add(msg.id)
                out.append((msg, valid_text(sentence)))  # a chat file's lone surrogate
    return out


def reply_sentence(text: str, asked: Sequence[str]) -> str | None:
    """The sentence of an assistant reply to bring back: the one naming the most question
    words among those stating a fact (a number, a date, a name, a quoted title); else the
    one naming the most question words; None when no sentence does either."""
    best: tuple[int, int, int] | None = None
    found = None
    for i, sentence in enumerate(split_sentences(text)):
        named = sum(names(sentence, t) for t in asked)
        fact = states_fact(sentence)
        if not named and not fact:
            continue
        key = (int(fact), named, -i)
        if best is None or key > best:
            best, found = key, sentence
    return found


def fitted(
    replies: Sequence[tuple[Message, str]], line: Callable[[Message, str], str], cost: Cost,
    room: int,
) -> list[tuple[Message, str, int]]:
    """The ``replies`` whose excerpt line (``line``) fits what is left of ``room``, with
    each one's cost, in the order given."""
    out: list[tuple[Message, str, int]] = []
    for msg, sentence in replies:
        spent = cost(line(msg, sentence))
        if spent <= room:
            room -= spent
            out.append((msg, sentence, spent))
    return out
