"""Cleaning a model-written summary, and the word-level judgements the checks use.
More in docs/COMPACTION.md."""

from __future__ import annotations

import re
from collections.abc import Iterable

from assistant.compaction.summary.echo import cut_echoes
from assistant.compaction.summary.markup import strip_tool_markup
from assistant.compaction.summary.prompts import REQUIRED_SECTIONS

#: A bullet is a copy when this many words or more of it are found verbatim in the input.
MIN_COPY_WORDS = 8
#: Of the five content sections after the Goal, at least this many must say something
#: (many real chats have taken no decision and have nothing half done: In Progress and Key
#: Decisions are then rightly empty; Done and Next Steps, or Critical Context, still say
#: what the chat is about).
MIN_INFORMATIVE = 2
CONTENT_SECTIONS = ("Done", "In Progress", "Key Decisions", "Next Steps", "Critical Context")
#: The problems of the check ``says_nothing`` (a repair asks for the silent sections again).
GOAL_SILENT = "the Goal names nothing from the conversation"
SAYS_NOTHING = "says nothing specific in: "

# Function words, the most common English words and the vocabulary of summaries and of
# coding chats in general: naming these is not naming anything from the conversation.
_STOP_TEXT = """
a about above across actually after again against ago all almost along already also although
always am among an and another any anyone anything are around as at away back bad be became
because become been before began being below best better between big both bring but by call
came can cannot case certain change clear come comes could day days did different do does
doing done down during each early easy either else end enough even ever every everyone
everything example fact far few find first for found from full further gave general get gets
getting give given go goes going good got great had happen happens has have having he help
her here high him his hold how however i if important in instead into is it its itself just
keep kept kind know known large last later least left less let like likely little long look
looks lot low made main make makes making many may maybe me mean means might more most much
must my near need needed needs never new next no none nor not now number of off often old on
once one only open or order other others our out over own part people per place please point
possible put quite rather real really right run said same say see seem seems set several
shall she short should show side since small so some someone something sometimes soon start
started still such sure take taken takes tell than that the their them then there these
they thing things think this those though three through time to today together too took
top toward try trying turn two under until up upon us use used useful uses using usually
very via want wanted wants was way we well went were what when where whether which while
who whole whom why will with within without work works would yes yet you your
user users assistant assistants conversation conversations chat summary summaries request
requests requested task tasks worked working goal goals progress step steps nothing item
items context critical decision decisions decided constraint constraints preference
preferences blocked block continue continued continues continuing mentioned said asked
asks ask answer answered question questions message messages reply replies current
currently information detail details following follow provide provided helps
helped discuss discussed discussion explain explained talk completed complete finish
finished further added add adding update updated create created file files code text data
content contents line lines function functions value values result results output input
command commands tool tools path paths list listed format response responses issue issues
problem problems project next later new way sure also
"""
_STOP = frozenset(_STOP_TEXT.split())
_FILLER = re.compile(
    r"^(?:none|n/?a|nothing|not (?:recorded|applicable|known|yet|stated)|unknown|tbd|todo|"
    r"no(?:thing)? (?:yet|so far)|-+|\.+|<[^>]*>|\(none\)|\[none\]|"
    # the placeholders of the extractive summary, copied from a previous summary
    r"not recorded \(extractive summary\)|\[\d+ older omitted\]|"
    r"in the user'?s own words(?:, recorded verbatim below)?.*|"
    r"continue with the latest (?:user )?request)\W*$",
    re.IGNORECASE,
)
#: How the digest words what the assistant did (:func:`~.digest.actions`): such a line says
#: what was done, which is no goal, decision, next step or critical context.
ACTION_FACT = re.compile(r"^\W*(?:the assistant used|\w+ [^ ]* failed:)", re.IGNORECASE)
#: Sections where a restated action counts (what was done, what is being done).
ACTION_SECTIONS = ("Done", "In Progress")
#: Where a restated action (or a failed one, "Blocked") is in place; elsewhere it is dropped.
_PROGRESS = ("Progress", "Done", "In Progress", "Blocked")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:@-]*[A-Za-z0-9_]|[A-Za-z0-9]")
_NEGATION = re.compile(
    r"\b(?:not|never|no|don'?t|doesn'?t|didn'?t|won'?t|can'?t|cannot|shouldn'?t|mustn'?t|"
    r"avoid(?:s|ed|ing)?|without|stop|nor|ban(?:s|ned)?|forbid(?:s|den)?|prohibit(?:s|ed)?|"
    r"disallow(?:s|ed)?|refus(?:e|es|ed))\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[,;:.!?]\s+|\s+(?:and|but|or|instead of)\s+|\n")
#: A heading line ("## Goal", "**Goal:**"); group 1 is its name.
HEADING = re.compile(r"^\s*(?:#{1,6}\s*|\*\*)([^*\n#]+?)(?:\*\*)?\s*:?\s*$")
_NONE = re.compile(r"^\W*none\W*$", re.IGNORECASE)
_BULLET_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s*)?")

#: A path or identifier: what :func:`respell` may put back (numbers never are).
_NAME = re.compile(r"[A-Za-z][/._][A-Za-z]")


# -- structure -------------------------------------------------------------------------------


def heading_blocks(text: str) -> list[tuple[str, str, list[str]]]:
    """(heading line, section name, its lines) in order; text before a heading is dropped."""
    out: list[tuple[str, str, list[str]]] = []
    for raw in text.splitlines():
        m = HEADING.match(raw)
        if m:
            out.append((raw, m.group(1).strip(), []))
        elif out:
            out[-1][2].append(raw)
    return out


def parse_sections(text: str) -> dict[str, list[str]]:
    """Heading (e.g. "Goal", "Done"; "Progress" counts as "Done") -> its lines, unmarked."""
    sections: dict[str, list[str]] = {}
    for _, name, lines in heading_blocks(text):
        key = next((s for s in (*REQUIRED_SECTIONS, *CONTENT_SECTIONS, "Blocked")
                    if s.lower() == name.lower()), name)
        current = sections.setdefault("Done" if key == "Progress" else key, [])
        for raw in lines:
            line = _BULLET_MARK.sub("", raw).strip()
            line = re.sub(r"^\*\*([^*]+)\*\*", r"\1", line).strip()
            if line:
                current.append(line)
    return sections


# -- content ---------------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return [w.lower().rstrip(".:") for w in _WORD.findall(text)]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


class Known:
    """What a conversation names: its words (and their stems and parts), and its text
    (a path or identifier of a summary counts as named when it occurs in it, also cut)."""

    def __init__(self, text: str) -> None:
        self.text = " ".join(text.lower().split())
        self.words: set[str] = set()
        #: The paths and identifiers it names, as written (what a misspelling is put back to).
        self.names: set[str] = {
            w.rstrip(".:") for w in _WORD.findall(text) if _NAME.search(w) and len(w) >= 8
        }
        for w in _words(text):
            self.words.add(w)
            self.words.add(_stem(w))
            for part in re.split(r"[/._:@-]+", w):
                if part:
                    self.words.add(part)
                    self.words.add(_stem(part))

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str):
            return False
        w = word.lower().rstrip(".:")
        if w in self.words or _stem(w) in self.words:
            return True
        return len(w) >= 6 and any(c in w for c in "/._") and w.strip("/.") in self.text


def _term(word: str) -> bool:
    if word in _STOP or _stem(word) in _STOP:
        return False
    return len(word) >= 4 or any(c.isdigit() for c in word)


def is_specific(raw: str, first: bool) -> bool:
    """A path, identifier, name (not ``first`` in its sentence) or number of 3+ digits: one
    match of these says something by itself."""
    if any(c in raw[1:-1] for c in "/._@:") or re.search(r"[a-z][A-Z]", raw):
        return True
    if sum(c.isdigit() for c in raw) >= 3:
        return True
    return not first and raw[:1].isupper() and raw[1:].islower() and len(raw) >= 3


def grounded_terms(line: str, known: Known) -> tuple[list[str], list[str]]:
    """(terms of ``line`` found in the conversation, those not found); ``known`` is
    :class:`Known` of the conversation. Filler ("none", "n/a", placeholders) has none."""
    if _FILLER.match(line.strip()):
        return [], []
    found: list[str] = []
    missing: list[str] = []
    for raw in dict.fromkeys(_WORD.findall(line)):
        word = raw.lower().rstrip(".:")
        if not _term(word):
            continue
        (found if raw in known else missing).append(raw)
    return found, missing


def informative(line: str, known: Known) -> bool:
    """Whether ``line`` says something from the conversation: two of its terms (or one path,
    identifier, name or long number) and at least a third of them are found there."""
    found, missing = grounded_terms(line, known)
    if not found or 2 * len(found) < len(missing):
        return False
    first = _WORD.findall(line)[:1]
    return len(found) >= 2 or any(is_specific(w, [w] == first) for w in found)


def about_the_user(line: str, users: Known) -> bool:
    """Whether a Goal ``line`` names something of what the user wrote (``users``), the
    user's goal in other words."""
    found, missing = grounded_terms(line, users)
    return bool(found) and 2 * len(found) >= len(missing) - 2


#: Names a word pattern cannot see whole: "C++", "C#", "F#".
_SIGIL_NAME = re.compile(r"(?<![\w+#])[A-Za-z]{1,3}(?:\+\+|#)(?![\w+#])")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\(\s*|[\"“]\s*)([A-Za-z])")


def invented(line: str, known: Known) -> list[str]:
    """Paths, identifiers, numbers and names in ``line`` that the conversation never names
    (a capitalised word counts as a name unless it starts a sentence)."""
    _found, missing = grounded_terms(line, known)
    starts = {m.start(1) for m in _SENTENCE_START.finditer(line)}
    firsts = {line[i:].split(maxsplit=1)[0].rstrip(".,:;!?)") for i in starts}
    out = [w for w in missing if any(c.isdigit() for c in w) or is_specific(w, w in firsts)]
    out += [n for n in _SIGIL_NAME.findall(line) if n.lower() not in known.text]
    return out


def _distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance of ``a`` and ``b``, or ``limit + 1`` once it exceeds ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
        if min(row) > limit:
            return limit + 1
    return row[-1]


#: A name may be this far from the one it misspells: one edit per this many characters.
RESPELL_CHARS = 7


def respell(name: str, known: Known) -> str | None:
    """The one path or identifier of the conversation (8+ characters; with or without its
    extension) within an edit per :data:`RESPELL_CHARS` characters of ``name``, or None: a
    small model copies "docs/architection_notes.md" for "docs/architecture_notes.md"."""
    if len(name) < 8 or not _NAME.search(name):
        return None
    low = name.lower()
    limit = max(1, len(low) // RESPELL_CHARS)
    best: dict[str, int] = {}
    for real in known.names:
        stem = real.rsplit(".", 1)[0] if "/" in real or "." in real[1:] else real
        d = min(_distance(low, real.lower(), limit), _distance(low, stem.lower(), limit))
        if d <= limit:
            best[real] = d
    if not best:
        return None
    closest = min(best.values())
    found = [real for real, d in best.items() if d == closest]
    return found[0] if len(found) == 1 else None


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(text) if len(c.strip()) > 3]


def _content(clause: str) -> set[str]:
    return {_stem(w) for w in _words(_NEGATION.sub(" ", clause)) if _term(w)}


def contradiction(line: str, rules: Iterable[str]) -> str | None:
    """The user's rule that ``line`` states the opposite of, if any: clauses sharing most
    content words (at least two, or the line's one), exactly one of them negated."""
    for rule in rules:
        for rc in _clauses(rule):
            rwords = _content(rc)
            if len(rwords) < 2:
                continue
            for lc in _clauses(line):
                lwords = _content(lc)
                if not lwords:
                    continue
                shared = rwords & lwords
                if len(shared) < min(2, len(lwords)) or len(shared) < 0.6 * min(
                    len(rwords), len(lwords)
                ):
                    continue
                if bool(_NEGATION.search(rc)) != bool(_NEGATION.search(lc)):
                    return rule
    return None


def _cut_inner_loop(line: str, n: int = 4) -> str:
    """``line`` cut where it starts looping: a run of up to six words repeated three times
    in a row keeps its first occurrence; a phrase of ``n`` words that comes back a third
    time is cut before its second occurrence."""
    words = line.split()
    low = [w.lower() for w in words]
    for i in range(len(low)):
        for p in range(1, 7):
            if i + 3 * p <= len(low) and low[i : i + p] == low[i + p : i + 2 * p] == low[
                i + 2 * p : i + 3 * p
            ]:
                return " ".join(words[: i + p]).rstrip(" ,;:-")
    seen: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(low) - n + 1):
        starts = seen.setdefault(tuple(low[i : i + n]), [])
        if starts and i - starts[-1] < n:
            continue
        starts.append(i)
        if len(starts) == 3:
            return " ".join(words[: starts[1]]).rstrip(" ,;:-")
    return line


def cut_partial_word(body: str, known: Known) -> str:
    """``body`` without a last word the grammar cut at the bullet's character limit: a piece
    of a longer word or path of the conversation ("src/v" of "src/validators.py") that the
    conversation never has whole. Such a piece would read as an invented name."""
    m = re.search(r"(\S+)$", body)
    if m is None:
        return body
    piece = m.group(1).lower()
    if len(piece) < 2:
        return body
    longer = re.search(re.escape(piece) + r"[\w/-]", known.text)
    whole = re.search(r"(?<![\w/.-])" + re.escape(piece) + r"(?![\w/-])", known.text)
    if longer is None or whole is not None:
        return body
    return body[: m.start()].rstrip(" ,;:-/(")


def _level(heading: str) -> int:
    stripped = heading.lstrip()
    return len(stripped) - len(stripped.lstrip("#")) or 2


#: Sections where a bullet copied from the conversation is kept: the user's own words.
COPY_SECTIONS = ("Goal", "Constraints & Preferences")


def copied(line: str, source_words: str) -> bool:
    """Whether ``line`` (:data:`MIN_COPY_WORDS`+ words) is in ``source_words`` verbatim."""
    words = _words(line)
    return len(words) >= MIN_COPY_WORDS and f" {' '.join(words)} " in source_words


#: A user message of this many words or more is a paste: the record keeps only an excerpt
#: of it (``user_paste``), so a fact the model copies out of it is not said twice.
PASTE_WORDS = 150
#: Where one message of a serialized span starts (:func:`.serialize.serialize`).
_MESSAGE_START = re.compile(r"\n\n(?=\[(?:User|Assistant|Tool|System)[^\]\n]*\]: )")


def copy_sources(source: str | None) -> tuple[str | None, str]:
    """(the words of ``source``, the words of its pasted user messages), for
    :func:`copied` and :func:`pasted_fact`."""
    if source is None:
        return None, ""
    pastes = [m for m in _MESSAGE_START.split(source)
              if m.startswith("[User]: ") and len(_words(m)) >= PASTE_WORDS]
    return word_text(source), word_text("\n".join(pastes)) if pastes else ""


def pasted_fact(line: str, pasted_words: str) -> bool:
    """Whether ``line`` is copied out of a pasted text and names something (a name, a path,
    a long number): kept, as the record keeps only an excerpt of a paste. Qwen2.5-Coder
    1.5B summarizing a pasted memo copied "Marta Kowalski will lead the migration team
    starting on 3 March."; dropped as a copy, its summary said nothing and was rejected."""
    if not pasted_words or not copied(line, pasted_words):
        return False
    raw = _WORD.findall(line)
    return any(is_specific(w, i == 0) for i, w in enumerate(raw))


def word_text(text: str) -> str:
    """``text`` as its words, space-separated and padded."""
    return f" {' '.join(_words(text))} "


def clean_summary(
    text: str, known: Known | None = None, source: str | None = None
) -> tuple[str, list[str]]:
    """(cleaned text, what was done): tool-call markup stripped, repeated bullets dropped,
    loops cut; with ``known``/``source``, the bullets that would mislead the chat dropped
    (docs/COMPACTION.md, ``summary/clean.py``); an emptied section gets "- none"."""
    source_words, pasted = copy_sources(source)
    notes: list[str] = []
    text, calls = strip_tool_markup(text)
    if calls:
        notes.append(f"removed {calls} tool-call block(s)")
    seen: set[str] = set()
    out: list[str] = []
    dropped = cut = empty = acted = copies = 0
    section = ""
    made_up: list[str] = []
    respelled: list[str] = []
    echoed: list[str] = []
    pending_heading = False
    heading_at = -1
    for raw in text.splitlines():
        heading = HEADING.match(raw)
        if heading:
            section = heading.group(1).strip()
            if pending_heading and _level(raw) <= _level(out[heading_at]):
                out.insert(heading_at + 1, "- none")
            out.append(raw)
            heading_at = len(out) - 1
            pending_heading = True
            continue
        mark = _BULLET_MARK.match(raw)
        body = raw[mark.end() :] if mark else raw
        shorter = _cut_inner_loop(body)
        if shorter != body:
            cut += 1
            body = shorter
        if known is not None and mark:
            body, cut_out = cut_echoes(cut_partial_word(body, known), known.text)
            echoed.extend(cut_out)
            for name in invented(body, known):
                real = respell(name, known)
                if real is not None:
                    at = r"(?<![\w/.-])" + re.escape(name) + r"(?![\w/-])"
                    body = re.sub(at, real.replace("\\", r"\\"), body)
                    respelled.append(f"{name} -> {real}")
        key = " ".join(_words(body))
        if len(key) >= 12 and key in seen:
            dropped += 1
            continue
        names = invented(body, known) if known is not None and mark else []
        if names:
            made_up.extend(names)
            continue
        if (source_words is not None and mark and section not in COPY_SECTIONS
                and copied(body, source_words) and not pasted_fact(body, pasted)):
            copies += 1
            continue
        if known is not None and mark and section not in _PROGRESS and ACTION_FACT.match(body):
            # "The assistant used edit_file on ..." as a next step or a decision would have
            # the model do again what is done.
            acted += 1
            continue
        if known is not None and mark and not grounded_terms(body, known)[0]:
            # Names nothing of the conversation: filler, a placeholder copied from an
            # extractive summary ("not recorded (extractive summary)"), or words of its own.
            empty += not _NONE.match(body)
            continue
        if key:
            seen.add(key)
        line = (raw[: mark.end()] if mark else "") + body
        if line.strip():
            pending_heading = pending_heading and not body.strip()
        out.append(line)
    if pending_heading and heading_at >= 0:
        out.insert(heading_at + 1, "- none")
    for n, what in (
        (dropped, "dropped {} repeated line(s)"),
        (cut, "cut {} looping line(s)"),
        (copies, "dropped {} bullet(s) copied from the conversation"),
        (acted, "dropped {} tool action(s) restated outside Done / In Progress"),
        (empty, "dropped {} bullet(s) naming nothing of the conversation"),
    ):
        if n:
            notes.append(what.format(n))
    if respelled:
        notes.append("put back misspelled name(s): " + ", ".join(respelled[:4]))
    if echoed:
        notes.append("cut phrase(s) of the summary prompt: " + "; ".join(echoed[:3]))
    if made_up:
        notes.append("dropped bullet(s) naming things not in the conversation: "
                     + ", ".join(made_up[:4]))
    return "\n".join(out).strip(), notes


def silent_sections(
    sections: dict[str, list[str]], known: Known, users: Known | None = None
) -> tuple[bool, list[str]]:
    """(whether the Goal says nothing, the content sections that say nothing)."""
    def counts(name: str, line: str) -> bool:
        return name in ACTION_SECTIONS or not ACTION_FACT.match(line)

    def says(name: str) -> bool:
        return any(
            informative(line, known) and counts(name, line) for line in sections.get(name, [])
        )

    goal = [g for g in sections.get("Goal", []) if counts("Goal", g)]
    goal_silent = not says("Goal") and not (users and any(about_the_user(g, users) for g in goal))
    return goal_silent, [name for name in CONTENT_SECTIONS if not says(name)]


