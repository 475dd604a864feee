"""Long multi-session personal chats for the answer benchmark (:mod:`bench.answers`).

A person tells the assistant about their life over several weeks: 8-10 dated sessions
(each opens with its date, "(Tuesday 4 March 2025) Hi again ..."), everyday talk
(:mod:`bench.personal_text`) and planted facts, 10,000-25,000 tokens (cl100k, the offline
tokenizer of the extractive runs). Generated from the seed alone (:class:`random.Random`
seeded by a string; no network, no model), so the same seed gives the same chat anywhere.

The planted facts and their questions (:data:`KINDS`, one question each):

* ``single``: a name or a number said once (the dog's name, the new manager, the rent);
* ``date``: a date said once (the dentist);
* ``spread``: a fact whose question needs two sessions ("my university friend" is named in
  an early session, where her wedding is comes weeks later; the question's ``also`` names
  the early message, so oracle (i) gets both);
* ``corrected``: a plan or number changed in a later session; the answer is the newest
  value (the old one is never accepted);
* ``assistant``: a fact only the assistant stated: a date it worked out from "next week"
  or "the day after tomorrow" and the session's date, a total it computed, a suggestion
  the user then accepted ("I love it, we will use that name").

Every accepted answer occurs in its source message and in no other message (checked; a
seed whose draws collide is drawn again with the next attempt). :func:`personal_transcript`
gives the :class:`~bench.answers.Transcript` the suite asks; :func:`save` writes the chat as
``NAME.jsonl`` and ``NAME.questions.json`` (the real sessions' format) for a look or a
replay. Nothing is kept in git: the chats are made at run time.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from assistant.config import DEFAULT_SYSTEM_PROMPT, Mode
from assistant.conversation import Message
from assistant.llm.fallback_tokenizer import Cl100kTokenizer

from . import personal_text as tx
from .answers import Transcript
from .questions import Question, accepted, message_text, validate

MIN_TOKENS = 10_000
MAX_TOKENS = 25_000
#: The order a small run picks the kinds in (one of each, then again).
KINDS = ("assistant", "corrected", "spread", "date", "single")
PREFIX = "personal-"
_ATTEMPTS = 40


@dataclass
class _Block:
    """Consecutive messages of one session: user, assistant, user, assistant ..."""

    msgs: list[tuple[str, str]]


@dataclass
class _Planted:
    kind: str
    question: str
    answers: tuple[str, ...]
    source: tuple[_Block, int]
    also: tuple[tuple[_Block, int], ...] = ()


@dataclass
class PersonalChat:
    name: str
    seed: int
    messages: list[Message]
    questions: list[Question]
    tokens: int
    days: list[date] = field(default_factory=list)


def fmt(day: date) -> str:
    """"14 March" (the way the chat writes a date)."""
    return f"{day.day} {day:%B}"


def date_answers(day: date) -> tuple[str, ...]:
    """The ways a reply may give ``day``: "14 March", "March 14", "14th March" ..."""
    d, m = day.day, f"{day:%B}"
    nth = f"{d}{'th' if 10 <= d % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(d % 10, 'th')}"
    return (f"{d} {m}", f"{m} {d}", f"{nth} {m}", f"{m} {nth}", f"{nth} of {m}")


class _Gen:
    """One attempt at a chat: the sessions' days, their blocks and the planted facts."""

    def __init__(self, seed: int, attempt: int) -> None:
        self.rng = random.Random(f"personal:{seed}:{attempt}")
        n = self.rng.randint(8, 10)
        start = date(2025, 1, 6) + timedelta(days=self.rng.randint(0, 60))
        self.days = [start]
        for _ in range(n - 1):
            self.days.append(self.days[-1] + timedelta(days=self.rng.randint(3, 6)))
        self.sessions: list[list[_Block]] = [[] for _ in range(n)]
        self.planted: list[_Planted] = []
        self.used_days: set[date] = set(self.days)

    def early(self) -> int:
        return self.rng.randrange(0, len(self.days) // 2)

    def late(self) -> int:
        return self.rng.randrange(len(self.days) // 2, len(self.days))

    def free_day(self, after: date, low: int, high: int) -> date:
        """A day ``low``-``high`` days after ``after`` that is no session's and no other
        fact's day."""
        options = [after + timedelta(days=k) for k in range(low, high + 1)]
        free = [d for d in options if d not in self.used_days] or options
        day = self.rng.choice(free)
        self.used_days.add(day)
        return day

    def ack(self) -> str:
        return " ".join(self.rng.sample(tx.REPLY_SENTENCES, 2))

    def place(self, session: int, *texts: str) -> _Block:
        """A block of alternating user and assistant ``texts`` in ``session``; a lone user
        text gets a short acknowledgement."""
        if len(texts) % 2:
            texts = (*texts, self.ack())
        roles = ("user", "assistant")
        block = _Block([(roles[i % 2], t) for i, t in enumerate(texts)])
        self.sessions[session].append(block)
        return block

    def plant(self, kind: str, question: str, answers: Sequence[str],
              source: tuple[_Block, int], *also: tuple[_Block, int]) -> None:
        self.planted.append(_Planted(kind, question, tuple(answers), source, tuple(also)))

    def filler(self) -> _Block:
        topic = self.rng.choice(sorted(tx.TOPICS))
        said = self.rng.sample(tx.TOPICS[topic], self.rng.randint(3, 5))
        user = " ".join(s.format(**{k: self.rng.choice(v) for k, v in tx.SLOTS.items()})
                        for s in said)
        reply = " ".join(self.rng.sample(tx.REPLY_SENTENCES, self.rng.randint(3, 5)))
        return _Block([("user", user), ("assistant", reply)])


# -- the planted facts ----------------------------------------------------------------------


def _singles(g: _Gen) -> None:
    pet, manager = g.rng.choice(tx.PETS), g.rng.choice(tx.MANAGERS)
    rent = g.rng.randrange(1150, 1990, 10)
    b = g.place(g.early(), f"Big news: we adopted a dog from the shelter. The kids named him "
                f"{pet}, and he already owns the sofa.")
    g.plant("single", "What did the kids name our dog?", [pet], (b, 0))
    b = g.place(g.late(), f"My new manager started this week. Her name is {manager} and she "
                "seems fair but very direct.")
    g.plant("single", "What is my new manager's name?", [manager], (b, 0))
    b = g.place(g.early(), f"We signed for the new flat! The rent is {rent} euros a month, "
                "with heating included.")
    g.plant("single", "How much is the monthly rent of our new flat, in euros?", [str(rent)],
            (b, 0))
    s = g.rng.randrange(len(g.days))
    day = g.free_day(g.days[s], 9, 30)
    b = g.place(s, f"I finally booked the dentist for {fmt(day)}, first thing in the "
                "morning. Not looking forward to it.")
    g.plant("date", "On what date is my dentist appointment?", date_answers(day), (b, 0))


def _spread(g: _Gen) -> None:
    friend, bro = g.rng.choice(tx.FRIENDS), g.rng.choice(tx.BROTHERS)
    city, city2 = g.rng.sample(tx.CITIES, 2)
    at = g.rng.randrange(len(tx.VENUES))
    venue, short = tx.VENUES[at], tx.VENUES[at].split(" ", 1)[1].replace("old ", "")
    a = g.place(g.early(), f"My best friend from university, {friend}, just got engaged! The "
                f"wedding will be in {city} this summer and I am one of the witnesses.")
    b = g.place(g.late(), f"{friend}'s invitation arrived today. The ceremony will be at "
                f"{venue}, with dinner straight after.")
    g.plant("spread", "Where will the wedding ceremony of my best friend from university be?",
            [short, " ".join(short.split()[-2:])], (b, 0), (a, 0))
    hours, minutes = g.rng.choice((3, 4)), g.rng.randrange(5, 60, 5)
    a = g.place(g.early(), f"My brother {bro} signed up for the {city2} marathon in the "
                "autumn. He is training every morning before work.")
    b = g.place(g.late(), f"{bro} told me his goal is to finish in {hours} hours {minutes} "
                "minutes. He has never run that fast, but he is determined.")
    g.plant("spread", "What finishing time is my brother aiming for in his marathon?",
            [f"{hours} hours {minutes} minutes", f"{hours}:{minutes:02d}",
             f"{hours}h{minutes:02d}", f"{hours} h {minutes}"], (b, 0), (a, 0))


def _corrected(g: _Gen) -> None:
    trip = g.rng.choice(tx.TRIPS)
    old_cafe, new_cafe = g.rng.sample(tx.CAFES, 2)
    s1, s2 = g.early(), g.late()
    d1 = g.free_day(g.days[-1], 5, 25)
    d2 = g.free_day(g.days[-1], 26, 45)
    g.place(s1, f"We booked our holiday to {trip}! We fly out on {fmt(d1)} and I am already "
            "making lists.")
    b = g.place(s2, f"Bad news about {trip}: the airline cancelled our flight, so now we fly "
                f"out on {fmt(d2)} instead.")
    g.plant("corrected", f"On what date do we fly out for our holiday to {trip}, after the "
            "changes?", date_answers(d2), (b, 0))
    budget = g.rng.randrange(8_000, 12_500, 500)
    raised = budget + g.rng.randrange(1_500, 4_500, 500)
    g.place(g.early(), f"We got quotes for the kitchen renovation and set a budget of "
            f"{budget:,} euros.")
    b = g.place(g.late(), f"After looking at the quotes again we raised the kitchen renovation "
                f"budget to {raised:,} euros.")
    g.plant("corrected", "What is our kitchen renovation budget now, in euros?",
            [str(raised)], (b, 0))
    g.place(g.early(), f"I joined a book club! We meet at {old_cafe} every other week.")
    b = g.place(g.late(), f"The book club has moved: from now on we meet at {new_cafe}, "
                "because the old place got too loud.")
    g.plant("corrected", "Where does my book club meet now?", [_core(new_cafe)], (b, 0))


def _core(name: str) -> str:
    """A place's name without a leading "the"."""
    return name[4:] if name.startswith("the ") else name


def _assistant_dates(g: _Gen) -> None:
    sister = g.rng.choice(tx.SISTERS)
    s = g.early()
    monday = g.days[s] + timedelta(days=7 - g.days[s].weekday())
    arrives = monday + timedelta(days=g.rng.randrange(7))
    g.used_days.add(arrives)
    b = g.place(s, f"My sister {sister} is coming to stay with us! Her flight lands on "
                f"{arrives:%A} next week, in the evening.",
                f"How exciting! So {sister} arrives on {arrives:%A} {fmt(arrives)}, in the "
                "evening. Shall I help you plan her first days here?")
    g.plant("assistant", "On what date does my sister arrive?", date_answers(arrives), (b, 1))
    s = g.rng.randrange(len(g.days))
    meeting = g.days[s] + timedelta(days=2)
    g.used_days.add(meeting)
    b = g.place(s, "The parent-teacher meeting at school is the day after tomorrow. Could "
                "you remind me what I should ask?",
                f"Of course. The meeting is on {meeting:%A} {fmt(meeting)}. You could ask how "
                "the kids are settling in and what they could practise at home.")
    g.plant("assistant", "On what date is the parent-teacher meeting?", date_answers(meeting),
            (b, 1))


def _assistant_said(g: _Gen) -> None:
    name, gift = g.rng.choice(tx.SPREADSHEETS), g.rng.choice(tx.GIFTS)
    b = g.place(g.rng.randrange(len(g.days)),
                "We want one shared spreadsheet for our savings, but we cannot agree on a "
                "name for it. Any ideas?",
                f"How about \"{name}\"? It is short, friendly and easy to find later.",
                "I love it, we will use that name.", g.ack())
    g.plant("assistant", "What name did we choose for our shared savings spreadsheet?",
            [name], (b, 1))
    b = g.place(g.rng.randrange(len(g.days)),
                "My mum turns sixty soon and I have no idea what to give her. She likes "
                "cooking, long walks and quiet evenings.",
                f"A {gift} could be a lovely choice for her: personal without being fussy.",
                "Perfect, I will order that this week.", g.ack())
    g.plant("assistant", "Which gift did we settle on for my mum's sixtieth birthday?",
            [gift.split()[-1] if gift.endswith(("scarf", "teapot", "blanket", "map"))
             else " ".join(gift.split()[:-1])], (b, 1))
    km, days = g.rng.randint(6, 14), g.rng.choice((3, 4))
    b = g.place(g.rng.randrange(len(g.days)),
                f"I have started cycling to work: it is {km} km each way and I do it "
                f"{('three', 'four')[days - 3]} days a week.",
                f"That is great exercise: {km * 2 * days} km a week in total, counting both "
                "ways. Remember to stretch afterwards.")
    g.plant("assistant", "How many kilometres a week do I cycle to work in total?",
            [str(km * 2 * days)], (b, 1))


# -- assembling -----------------------------------------------------------------------------


def _attempt(seed: int, attempt: int) -> PersonalChat | None:
    g = _Gen(seed, attempt)
    for plant in (_singles, _spread, _corrected, _assistant_dates, _assistant_said):
        plant(g)
    tok = Cl100kTokenizer()
    target = g.rng.randint(MIN_TOKENS + 2_000, MAX_TOKENS - 3_000)
    for s in range(len(g.days)):
        g.rng.shuffle(g.sessions[s])
        greet = g.filler()
        role, text = greet.msgs[0]
        day = g.days[s]
        greet.msgs[0] = (role, f"({day:%A} {fmt(day)} {day.year}) "
                         f"{g.rng.choice(tx.GREETINGS)} {text}")
        g.sessions[s].insert(0, greet)
    size = sum(tok.count(t) for blocks in g.sessions for b in blocks for _r, t in b.msgs)
    while size < target:
        s = g.rng.randrange(len(g.days))
        block = g.filler()
        g.sessions[s].insert(g.rng.randint(1, len(g.sessions[s])), block)
        size += sum(tok.count(t) for _r, t in block.msgs)
    return _assemble(g, seed, size)


def _assemble(g: _Gen, seed: int, size: int) -> PersonalChat | None:
    messages: list[Message] = []
    where: dict[int, int] = {}
    for blocks in g.sessions:
        for b in blocks:
            where[id(b)] = len(messages)
            messages += [Message(role="user" if r == "user" else "assistant", content=t)
                         for r, t in b.msgs]

    def at(ref: tuple[_Block, int]) -> int:
        return where[id(ref[0])] + ref[1]

    planted = sorted(g.planted, key=lambda p: at(p.source))
    questions = [
        Question(f"q{n + 1}", p.kind, p.question, p.answers, at(p.source),
                 also=tuple(at(r) for r in p.also))
        for n, p in enumerate(planted)
    ]
    if validate(messages, questions) or any(_elsewhere(messages, q) for q in questions):
        return None
    return PersonalChat(f"{PREFIX}{seed}", seed, messages, questions, size, g.days)


def _elsewhere(messages: Sequence[Message], q: Question) -> list[int]:
    """Messages other than ``q``'s source that hold one of its answers."""
    return [i for i, m in enumerate(messages)
            if i != q.source and accepted(message_text(m), q.answers)]


def generate_chat(seed: int) -> PersonalChat:
    """The personal chat of ``seed`` (the first attempt whose answers do not collide)."""
    for attempt in range(_ATTEMPTS):
        chat = _attempt(seed, attempt)
        if chat is not None:
            return chat
    raise RuntimeError(f"no clean personal chat for seed {seed} in {_ATTEMPTS} attempts")


def pick(questions: Sequence[Question], limit: int | None) -> list[Question]:
    """Up to ``limit`` questions taking the kinds in turn (:data:`KINDS`), in chat order."""
    if limit is None or limit >= len(questions):
        return list(questions)
    queues = {k: [q for q in questions if q.kind == k] for k in KINDS}
    out: list[Question] = []
    while len(out) < limit and any(queues.values()):
        for kind in KINDS:
            if queues[kind] and len(out) < limit:
                out.append(queues[kind].pop(0))
    return sorted(out, key=lambda q: q.source)


def personal_transcript(seed: int, *, limit: int | None = None) -> Transcript:
    """The chat of ``seed`` as the answer benchmark asks it (local mode, the app's prompt)."""
    chat = generate_chat(seed)
    return Transcript(chat.name, "personal chat", Mode.LOCAL, DEFAULT_SYSTEM_PROMPT,
                      chat.messages, pick(chat.questions, limit))


def save(chat: PersonalChat, folder: Path) -> Path:
    """``NAME.jsonl`` (one message a line) and ``NAME.questions.json`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{chat.name}.jsonl"
    path.write_text("".join(json.dumps(m.to_openai(as_model_sees=False), ensure_ascii=False)
                            + "\n" for m in chat.messages), encoding="utf-8")
    items = [{"id": q.id, "kind": q.kind, "question": q.question, "answers": list(q.answers),
              "source": q.source, **({"also": list(q.also)} if q.also else {})}
             for q in chat.questions]
    (folder / f"{chat.name}.questions.json").write_text(
        json.dumps({"questions": items}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
