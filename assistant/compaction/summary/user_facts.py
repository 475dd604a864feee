"""What a user sentence pins down: a fact (a value) or a decision, as opposed to chatter.
More in docs/COMPACTION.md."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"\d")
_QUOTED = re.compile(r"[\"“'`][^\"”'`]{1,80}[\"”'`]")
_PATH = re.compile(r"[\w~.-]*/[\w.-]+|\b[\w-]+\.(?:[a-z]{1,5})\b")
_IDENTIFIER = re.compile(
    r"\b(?:[a-z]+_[a-z0-9_]+|[a-z]+(?:-[a-z0-9]+)+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|"
    r"[A-Z]{2,}(?:[.\-/][A-Z]{1,})+|[A-Z]{2,}\d*)\b"
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
    r"agreed|we'?ll use|we will use|let'?s use|let'?s go)\b",
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


#: A number, date, amount, quoted string, path, identifier, or a stated setting.
_VALUE = (_NUMBER, _QUOTED, _PATH, _IDENTIFIER, _SETTING)
#: A decision: a question seeking agreement, a hedge, a correction or a choice.
_DECISION = (_AGREE_QUESTION, _HEDGE, _CORRECTION)


def pins_down(sentence: str) -> bool:
    """A fact (a value) or a decision (docs/COMPACTION.md): kept ahead of chatter."""
    text = sentence.strip()
    return any(p.search(sentence) for p in _VALUE) or any(p.search(text) for p in _DECISION)
