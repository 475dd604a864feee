"""What a user sentence pins down: a fact (a value) or a decision, as opposed to chatter.
More in docs/COMPACTION.md."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"\d")
_QUOTED = re.compile(r"[\"“'`][^\"”'`]{1,80}[\"”'`]")
_PATH = re.compile(r"[\w~.-]*/[\w.-]+|\b[\w-]+\.(?:[a-z]{1,5})\b")
_IDENTIFIER = re.compile(
    r"\b(?:[a-z]+_[a-z0-9_]+|[a-z]+(?:-[a-z0-9]+)+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|"
    r"[A-Z]{2,}(?:[.\-/][A-Z]{1,})+|(?!OK\b)[A-Z]{2,}\d*)\b"
)
_SETTING = re.compile(
    r"\b(port|budget|price|cost|deadline|date|version|format|indent\w*|name[ds]?|called|"
    r"password|user ?name|address|url|host|branch|release|limit|timeout|size|language|"
    r"locale|time ?zone|currency|default|encoding|style)\b[^.?!]{0,40}?\b(is|are|was|will be|"
    r"=|:|should be|must be|to)\b",
    re.IGNORECASE,
)
_AGREE_QUESTION = re.compile(
    r"(,\s*(right|correct|ok|okay|yes|no|agreed|fine|yeah)\s*\?|"
    r"\b(isn'?t it|aren'?t we|don'?t we|won'?t we|shouldn'?t we|didn'?t we)\s*\?|"
    r"^\W*(shall|should) (we|i)\b.*\?)\s*$",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(not sure|unsure|maybe|perhaps|probably|postpone|put off|hold off|later|for now|"
    r"let'?s not|leave (it|that|this) (for|out|as)|skip (it|that|this)|i guess|i think we|"
    r"we could|we might|might be better|go with|stick with|settle on|decided|decide|"
    r"agreed|we'?ll use|we will use|let'?s use|let'?s go|we can)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"(^\W*(no|nope|actually|wait|sorry|correction|rather|instead)\b|\bnot\s+\S+\s*,?\s*but\b|"
    r",\s*not\s+\w+|\b(use|using|it'?s|is)\s+\S+\s+not\s+\S+|\binstead( of)?\b|\bi meant\b|"
    r"\bmake it\b|\bchange it to\b|"
    r"\b(call|name) (it|this|that|the \w+)\b|\brename\b|"
    # creating a named thing: "create a branch refactor", "make a new folder drafts"
    r"\b(create|make|open|start|add|set up|switch to|check ?out)\s+(an?\s+|the\s+)?(new\s+)?"
    r"(branch|folder|directory|file|project|repo(sitory)?|module|package|tag|table|database|"
    r"account|channel|list|page|section)\s+(called\s+|named\s+)?"
    r"(?!(?:and|or|to|about|with|for|in|on|of|from|that|this|it|so|then|as|at|by)\b)[\w.-]+)",
    re.IGNORECASE,
)


#: A proposal of what we do next: "let's realize our plan" (a choice among them is a decision).
_PROPOSAL = re.compile(r"\blet'?s\b|\blet us\b", re.IGNORECASE)
#: A number, date, amount, quoted string, path, identifier, a stated setting, a proposal.
_VALUE = (_NUMBER, _QUOTED, _PATH, _IDENTIFIER, _SETTING, _PROPOSAL)
#: A decision: a question seeking agreement, a hedge, a correction or a choice.
_DECISION = (_AGREE_QUESTION, _HEDGE, _CORRECTION)


#: A reply that confirms: "yes, ...", "sure, ..." (with more after it; "ok, ..." is filler).
_CONFIRM = re.compile(
    r"^\W*(yes|yep|yeah|yup|yea|sure|correct|exactly|agreed|right|perfect|sounds good|"
    r"that works|that'?s it)\b[\s,.!:;-]+\w",
    re.IGNORECASE,
)
#: A reply that picks one of the options offered: "go with B", "the second one", "option 2".
_CHOICE = re.compile(
    r"(^\W*(?:(?:let'?s|i'?ll|we'?ll)\s+)?(?:go|going)\s+(?:with|for)\b|"
    r"^\W*(?:(?:let'?s|i'?ll|we'?ll)\s+)?(?:pick|take|choose)\s+\w|"
    r"^\W*(?:the\s+)?(?:first|second|third|fourth|fifth|last|latter|former|other|top|bottom|"
    r"middle|1st|2nd|3rd|4th)\s+(?:one|option|approach|version|variant|choice|way|proposal|"
    r"suggestion|solution)\b|"
    r"\b(?:option|plan|variant|approach|choice|proposal|solution|number)\s+(?:[a-h]|\d+|one|"
    r"two|three|four)\b)",
    re.IGNORECASE,
)
#: A bare pick: "B", "B please", "2 then".
_BARE_PICK = re.compile(r"^\W*(?:[A-H]|[1-9])\s*(?:please|pls|then|it is|is fine|is better)?\W*$")
#: A correction that opens with its negation: "no rgb indices", "not tabs, spaces", "nope".
_OPENS_NEGATED = re.compile(
    r"^\W*(?:no|not|nope|nah)\b[\s,.!:;-]*(?!(?:problem|worries|idea|thanks|doubt|way|rush|"
    r"hurry|matter|big deal|offen[cs]e)\b)\w",
    re.IGNORECASE,
)
#: A negation anywhere: "..., no rgb indices", "don't ...", "use X not Y".
_NEGATION = re.compile(
    r"(?:^|[,;:!.(-]\s*|\b(?:and|but|or)\s+)(?:no|not)\s+(?!(?:problem|worries|idea|thanks|"
    r"doubt|way|rush|hurry|matter|sure)\b)\w|\b(?:don'?t|do not|never|stop|quit|instead of)\b|"
    r"\b\w+\s+not\s+\w",
    re.IGNORECASE,
)
#: A correction naming what is right and what is not: "we're using `click` not `argparse`".
_THIS_NOT_THAT = re.compile(
    r"\b(?:use|using|it'?s|we'?re|is|are)\s+\S+\s*,?\s+(?:and\s+)?not\s+\S+", re.IGNORECASE
)
#: Swearing and exasperation: a sentence with these and a negation or an imperative is a
#: correction however it is put ("omfg use fucking rgb values").
_FRUSTRATION = re.compile(
    r"\b(?:fuck\w*|wtf|omfg|omg|ffs|damn\w*|goddamn\w*|shit\w*|jesus|christ|seriously|"
    r"ugh+|argh+|for god'?s sake)\b",
    re.IGNORECASE,
)


#: Disliking what was done: "I dislike you adding all the inline documentation ...".
_DISLIKE = re.compile(
    r"\bi\s+(?:really\s+|strongly\s+)?(?:dislike|hate|don'?t\s+like|do\s+not\s+like|"
    r"didn'?t\s+(?:want|ask)|did\s+not\s+(?:want|ask)|never\s+(?:asked|wanted))\b",
    re.IGNORECASE,
)
#: Denying that a thing exists: "There's no BookMinder Team." (not "there's no rush").
_NO_SUCH = re.compile(
    r"^\W*there(?:'s|\s+is|\s+are)\s+no\s+"
    r"(?!(?:problem|worries|need|rush|hurry|way|doubt|point|time|reason|harm|chance)\b)\w",
    re.IGNORECASE,
)


def decides(sentence: str, imperative: bool) -> bool:
    """A correction or a confirmation (docs/COMPACTION.md): an imperative with a negation, a
    reply that opens with "no"/"not", a reply that confirms with an imperative ("yes, use
    Book"), a pick of an option ("go with B", "the second one"), swearing with an imperative
    or a negation. ``imperative``: a clause of it starts with an imperative verb."""
    text = sentence.strip()
    if not text or text.endswith("?"):
        return False
    if _CHOICE.search(text) or _BARE_PICK.match(text) or _OPENS_NEGATED.match(text):
        return True
    if _THIS_NOT_THAT.search(text) or _DISLIKE.search(text):
        return True
    if _NO_SUCH.match(text):
        return True
    negated = bool(_NEGATION.search(text))
    if imperative and (negated or _CONFIRM.match(text)):
        return True
    return bool(_FRUSTRATION.search(text)) and (imperative or negated)


def pins_down(sentence: str) -> bool:
    """A fact (a value) or a decision (docs/COMPACTION.md): kept ahead of chatter."""
    return any(p.search(sentence) for p in _VALUE) or is_decision(sentence)


def is_decision(sentence: str) -> bool:
    """A decision: a question seeking agreement ("..., right?"), a hedge that settles or
    postpones something ("maybe we can postpone that"), a correction or a choice; ranked
    with the instructions, after facts that only state a value."""
    text = sentence.strip()
    return any(p.search(text) for p in _DECISION)
