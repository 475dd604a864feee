"""What a user message is made of: instructions, questions, statements, pasted material.
More in docs/COMPACTION.md."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from assistant.compaction.summary.user_facts import decides, is_decision, pins_down
from assistant.compaction.summary.user_paste import (
    EXCERPT_LINES,
    OUTPUT_SHAPES,
    block_shape,
    excerpt,
    output_lines,
)
from assistant.compaction.tokens import Memo

Count = Callable[[str], int]
Kind = Literal["rule", "request", "question", "statement", "pasted", "command"]
INSTRUCTION_KINDS: frozenset[str] = frozenset({"rule", "request"})


_FENCE = re.compile(r"^\s*(```|~~~)")
_SLASH = re.compile(r"^/[A-Za-z][\w-]*(\s|$)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_LOG = re.compile(
    r"^\s*(\[?\d{4}-\d{2}-\d{2}[ T]\d|\[?\d{1,2}:\d{2}:\d{2}|\[?(TRACE|DEBUG|INFO|NOTICE|WARN|"
    r"WARNING|ERROR|ERR|FATAL|CRITICAL)\]?[:\s]|Traceback \(most recent call last\)|File \".+\", "
    r"line \d+|at [\w.$<>]+ ?\(.*\)\s*$|[\w.]+(Error|Exception|Warning)(:|$)|\$ |>>> |PS [A-Z]:\\)"
)
_COMMENT = re.compile(r"^\s*(#|//|--\s|/\*|\*\s|\*/|;;|<!--)")
_CODE_START = re.compile(
    r"^\s*(def |class |import |from \S+ import |return\b|function\b|const |let |var |public |"
    r"private |protected |async |await |export |#include|package |fn |impl |struct |if \(|"
    r"for \(|while \(|@\w+|<\/?\w+[^>]*>$)"
)
_CODE_END = re.compile(r"([{};]|\)\s*:|=>|->)\s*$|^\s*[}\])]")
_SYMBOLS = set("{}()[];=<>|&$`\\")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")

_FILLER_WORDS = (
    "ok okay alright allright so now then and also btw great cool yes no well hey hi hello "
    "please just first next finally lastly actually right sure thanks thank you oh ah hmm "
    "but anyway omfg omg wtf ffs fucking fuckin fuck damn dammit goddamn ugh argh jeez dude "
    "man bro lol pls plz seriously come on"
)
_FILLERS = frozenset(_FILLER_WORDS.split())
_VERB_WORDS = """add adjust answer append apply ask avoid build bump call change check clean clear
    clone commit compare compile complete configure continue convert copy count create cut
    debug decide define delete deploy describe design do document don't draft drop edit
    enable ensure explain export extract figure fill find finish fix follow format generate
    give go group handle implement import include inline install introduce investigate keep
    label leave let list load log look make mark merge migrate move name note open optimize
    organize outline patch pick plan point port prefer prepare print profile propose provide
    pull push put read rebase record refactor reformat remember remove rename reorder replace
    reply report reset respond restore restructure return reuse review revert rewrite run
    save say search send separate set setup show simplify skip sort specify split start
    stop store structure summarize swap switch take tell test tidy track translate try turn
    undo unify update upgrade use validate verify wait walk wrap write"""
_VERBS = frozenset(_VERB_WORDS.split())
_DIRECTIVE = re.compile(
    r"\b(must|mustn'?t|never|always|should(?:n'?t)?|need(?:s)? to|have to|has to|don'?t|"
    r"do not|only|avoid|prefer\w*|make sure|ensure|remember|please|i want|i'?d like|"
    r"i would (?:only |rather |really )?(?:want|like|prefer)|we want|we need|i need|let'?s|"
    r"let us|no more than|at most|at least|required?|instead of|interested in|call it|"
    r"name it|keep|it needs to|has to be|needs to be)\b",
    re.IGNORECASE,
)
_ASIDE = re.compile(r"\([^()]*\)")
_REPORTED = re.compile(
    r"\b(?:how|what|whether|where|when|why|which|all|everything|anything)\s+(?:we|i|you|they)\s+"
    r"(?:should(?:n'?t)?|must|need(?:s)? to|have to|want)\b|"
    r"\b(?:i|we|you|they)\s+(?:don'?t|do not)\s+(?:know|think|understand|see|get|remember|"
    r"believe|care|mind|recall)\b",
    re.IGNORECASE,
)
_NEED_YOU = re.compile(r"\bi need you to\b", re.IGNORECASE)
#: Directive words that ask for something now rather than state a rule.
_FOR_NOW = frozenset({"please", "let's", "lets", "let’s", "let us"})
_REQUEST_QUESTION = re.compile(
    r"(^|[,;:]\s*)\W*(?:\w+,\s*)?((can|could|would|will) (you|we|u) |(how about|what about "
    r"(?:we|you)|why don'?t (?:you|we)|please)\b)",
    re.IGNORECASE,
)
_ABBREVIATION = re.compile(r"\b(e\.g|i\.e|etc|vs|cf|approx|Mr|Mrs|Ms|Dr|No|fig)\.$", re.IGNORECASE)
_CLAUSE = re.compile(r"[,;:]\s+")
_ACK = re.compile(
    r"^\W*(ok(ay)?|alright|yes|yep|no|nope|thanks?( you)?|ty|cool|great|nice|continue|go on|"
    r"go ahead|proceed|hi|hello|hey|sure)\W*$",
    re.IGNORECASE,
)


@dataclass
class Piece:
    """A sentence or a pasted block of a user message, with the text between it and the
    next piece (spaces, line breaks) kept so joining pieces gives the message back."""

    text: str
    kind: Kind
    sep: str = ""
    lines: int = 1
    kept: bool = True
    clipped: str | None = None
    #: States a fact or a decision (:func:`.user_facts.pins_down`): kept ahead of chatter.
    salient: bool = False
    #: What a pasted block is (:func:`.user_paste.block_shape`): "listing", "log", "code"...
    shape: str = ""
    #: Said more than once (the record keeps the newest copy, at the rank of the highest).
    repeated: bool = False
    #: A decision (a correction, a confirmation, a choice, a hedge, "..., right?"): ranked
    #: with the instructions (:func:`.user_facts.is_decision`, :func:`.user_facts.decides`).
    decision: bool = False

    def shown(self) -> str:
        if self.kept and self.kind == "pasted" and self.excerpted():
            return excerpt(self.text, self.shape)
        if self.kept:
            return self.clipped if self.clipped is not None else self.text
        if self.kind == "pasted":
            return f"[pasted {self.lines:,} line{'s' if self.lines != 1 else ''} omitted]"
        return "[...]"

    def excerpted(self) -> bool:
        """Pasted output long enough to be shown as an excerpt (:func:`.user_paste.excerpt`)."""
        return self.shape in OUTPUT_SHAPES and self.lines > EXCERPT_LINES


# -- classification -------------------------------------------------------------------------
def is_slash_command(text: str) -> bool:
    stripped = text.strip()
    return bool(_SLASH.match(stripped)) and "\n" not in stripped


def is_substantive(text: str) -> bool:
    """Not a slash command, not a bare acknowledgement ("ok", "thanks", "continue")."""
    stripped = text.strip()
    if not stripped or is_slash_command(stripped) or _ACK.match(stripped):
        return False
    return len(_WORD.findall(stripped)) >= 3 or any(
        p.kind in INSTRUCTION_KINDS for p in split_user_text(stripped)
    )


def task_statement(user_texts: Sequence[str]) -> str | None:
    """The first substantive user message (the task), else the first non-empty one."""
    for text in user_texts:
        if is_substantive(text):
            return text.strip()
    for text in user_texts:
        if text.strip() and not is_slash_command(text):
            return text.strip()
    return None


def _is_pasted_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    if stripped.startswith(">") or _LOG.match(line) or _COMMENT.match(line):
        return True
    words = _WORD.findall(stripped)
    if stripped[-1] in ".?!" and len(words) >= 4 and not line.startswith(("    ", "\t")):
        return False
    if _CODE_START.match(line) or _CODE_END.search(stripped):
        return True
    symbols = sum(1 for ch in stripped if ch in _SYMBOLS)
    if len(stripped) >= 10 and symbols / len(stripped) >= 0.08 and len(words) < 8:
        return True
    return line.startswith(("    ", "\t")) and len(words) < 12


def _sentence_kind(sentence: str) -> Kind:
    text = sentence.strip()
    if is_slash_command(text):
        return "command"
    imperative = any(_starts_imperative(clause) for clause in _CLAUSE.split(text))
    directives = {" ".join(m.group(0).lower().split())
                  for m in _DIRECTIVE.finditer(_directing(text))}
    # "please ..." and "let's ..." ask for something now; a rule holds for the whole chat.
    rule = bool(directives - _FOR_NOW)
    if text.endswith("?"):
        if _REQUEST_QUESTION.search(text):
            return "rule" if rule else "request"
        return "question"
    if rule:
        return "rule"
    return "request" if imperative or directives else "statement"


def _directing(text: str) -> str:
    """The words of ``text`` that can direct: without asides in parentheses ("(only set up
    the project)") and clauses that only report a directive or a state of mind ("how we
    should work", "all I need to know", "we don't know whether"); "I need you to ..." asks
    like "please ..."."""
    text = _ASIDE.sub(" ", text)
    text = _REPORTED.sub(" ", text)
    return _NEED_YOU.sub("please", text)


def _classify(sentence: str) -> tuple[Kind, bool, bool]:
    """(kind, salient, decision): a correction or a confirmation
    (:func:`.user_facts.decides`) is a request that pins something down, a decision."""
    kind = _sentence_kind(sentence)
    if kind in ("statement", "request"):
        imperative = any(_starts_imperative(c) for c in _CLAUSE.split(sentence.strip()))
        if decides(sentence, imperative):
            return "request", True, True
    decision = is_decision(sentence)
    return kind, decision or pins_down(sentence), decision


def _starts_imperative(clause: str) -> bool:
    words = [w.lower() for w in _WORD.findall(clause)]
    while words and words[0] in _FILLERS:
        words = words[1:]
    return bool(words) and words[0] in _VERBS


def _prose_pieces(block: str) -> list[Piece]:
    out: list[Piece] = []
    for line_match in re.finditer(r"[^\n]*\n*", block):
        line = line_match.group(0)
        if not line:
            continue
        body = line.rstrip()  # the spaces before a cut fence are the separator too
        newlines = line[len(body) :]
        parts = _SENTENCE_END.split(body)
        pos = 0
        for i, part in enumerate(parts):
            start = body.index(part, pos)
            end = start + len(part)
            nxt = body.index(parts[i + 1], end) if i + 1 < len(parts) else len(body)
            sep = body[end:nxt] + (newlines if i + 1 == len(parts) else "")
            pos = end
            if out and not out[-1].sep.endswith("\n") and _ABBREVIATION.search(out[-1].text):
                out[-1].text += out[-1].sep + part  # "e.g. compact" is one sentence
                out[-1].sep = sep
                out[-1].kind, out[-1].salient, out[-1].decision = _classify(out[-1].text)
            elif part.strip():
                kind, salient, decision = _classify(part)
                out.append(Piece(part, kind, sep, salient=salient, decision=decision))
            elif out:
                out[-1].sep += part + sep
    return out


#: Each text is split once: the record, the rules, the digest and the checks all ask.
_SPLIT: Memo[str, tuple[Piece, ...]] = Memo(4_096)


def split_user_text(text: str) -> list[Piece]:
    """``text`` as pieces (sentences and pasted blocks) in order (docs/COMPACTION.md).
    Split once per text; each caller gets its own copies (the record marks them)."""
    return [replace(p) for p in _SPLIT.get(text, lambda: tuple(_split(text)))]


def _fence_segments(text: str) -> tuple[list[str], list[str]]:
    """``text`` as lines, with a fence opened or closed in the middle of a line cut there
    ("I'm here: ```bash ..." -> "I'm here:" and "```bash ..."; "... Books.plist ``` When I
    opened ..." -> "... Books.plist ```" and "When I opened ..."), and what joins each
    segment to the next (a line break, or the spaces at the cut): pasted output is found
    wherever a fence puts it."""
    segments: list[str] = []
    joins: list[str] = []
    inside = False
    for line in text.split("\n"):
        rest = line
        cut = _mid_fence(rest, inside)
        while cut is not None:
            head, tail = rest[:cut], rest[cut:]
            segments.append(head.rstrip())
            joins.append(head[len(head.rstrip()):] + tail[: len(tail) - len(tail.lstrip())])
            rest = tail.lstrip()
            inside = False  # a closing fence ended the head; an opening one starts the rest
            cut = _mid_fence(rest, inside)
        if rest.count("```") % 2 == 1:
            inside = not inside
        segments.append(rest)
        joins.append("\n")
    joins[-1] = ""
    return segments, joins


def _mid_fence(line: str, inside: bool) -> int | None:
    """Where ``line`` is cut (:func:`_fence_segments`): before a fence opened after words,
    after a fence that closes before words; None when it is not cut."""
    at = line.find("```")
    if at < 0 or (not line[:at].strip() and not inside):
        return None
    if inside:  # words after a closing fence; one word after a fence line is its language
        end = at + 3
        words = line[end:].split()
        return end if len(words) > 1 or (words and line[:at].strip()) else None
    if line.count("```") % 2 == 0:
        return None  # ```inline``` code, opened and closed on the line
    return at


def _split(text: str) -> list[Piece]:
    lines, joins = _fence_segments(text)
    marks = [False] * len(lines)
    shapes = output_lines(lines)
    # What follows a fence closed on its line is typed, not pasted ("``` When I opened").
    typed = {k for k in range(1, len(lines))
             if "\n" not in joins[k - 1] and lines[k - 1].endswith("```")}
    i = 0
    while i < len(lines):  # fenced blocks, fence lines included
        if _FENCE.match(lines[i]):
            j = i + 1
            while j < len(lines) and not _FENCE.match(lines[j]) and "```" not in lines[j]:
                j += 1
            # A fence closed inside a line that goes on in words ("... ``` When I ...",
            # not cut) ends the block before that line, which is judged like any other.
            inline = j < len(lines) and not lines[j].rstrip().endswith("```")
            for k in range(i, min(j if inline else j + 1, len(lines))):
                marks[k] = True
            i = j if inline else j + 1
            continue
        marks[i] = i not in typed and (shapes[i] is not None or _is_pasted_line(lines[i]))
        i += 1
    # Blank or short lines between pasted lines belong to the pasted block.
    for k in range(1, len(lines) - 1):
        if not marks[k] and marks[k - 1] and (not lines[k].strip()):
            nxt = next((m for m in range(k + 1, len(lines)) if lines[m].strip()), None)
            if nxt is not None and marks[nxt]:
                marks[k] = True
    return _pieces(lines, joins, marks, shapes)


def _pieces(
    lines: Sequence[str], joins: Sequence[str], marks: Sequence[bool],
    shapes: Sequence[str | None],
) -> list[Piece]:
    """Runs of pasted and of prose segments as pieces, in order."""
    pieces: list[Piece] = []
    k = 0
    while k < len(lines):
        j = k
        while j < len(lines) and marks[j] == marks[k]:
            j += 1
        chunk = "".join(lines[m] + joins[m] for m in range(k, j))
        if marks[k]:
            body = chunk.rstrip()
            shape = block_shape(lines[k:j], shapes[k:j])
            pieces.append(Piece(body, "pasted", chunk[len(body) :],
                                lines=body.count("\n") + 1, shape=shape))
        else:
            lead = chunk[: len(chunk) - len(chunk.lstrip("\n"))] if pieces else ""
            if lead:  # the blank lines after a pasted block are its separator
                pieces[-1].sep += lead
            pieces.extend(_prose_pieces(chunk[len(lead) :]))
        k = j
    return pieces


def instructions(text: str) -> list[str]:
    """The user's instruction sentences in ``text`` (pasted material never counts)."""
    return [p.text.strip() for p in split_user_text(text) if p.kind in INSTRUCTION_KINDS]
