"""A small reader of GBNF grammars (llama.cpp's grammar format) without llama.cpp.

:func:`to_regex` translates a grammar without recursion into a Python regular expression
that matches exactly the grammar's language; :func:`shortest` writes the least text the
grammar allows (what a model with nothing to say under it would write). The scripted test
backend uses them to check that a canned reply is something a model constrained by that
grammar could have produced (and to write one when it has none), and tests use them to
state what a grammar allows. Supported: rules ``name ::= ...`` (one
per line, ``#`` comments), literals with ``\\n \\r \\t \\\\ \\" \\xHH \\uHHHH`` escapes,
character classes (``[a-z]``, ``[^...]``), ``.``, groups, alternatives and the repetitions
``* + ? {m} {m,} {m,n}``. The real parser is llama.cpp's: a grammar it rejects raises
:class:`~assistant.llm.base.GrammarError` in the llama backend.
"""

from __future__ import annotations

import re
import re._parser as _sre_parse  # type: ignore[import-not-found]  # the regex parser
import string
from typing import Any

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]"}


class GBNFSyntaxError(ValueError):
    """The grammar is not in the supported GBNF subset (or not GBNF at all)."""


def parse_rules(grammar: str) -> dict[str, str]:
    """Rule name -> its right-hand side text."""
    rules: dict[str, str] = {}
    for raw in grammar.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, body = line.partition("::=")
        if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name.strip()):
            raise GBNFSyntaxError(f"not a rule: {line[:60]!r}")
        rules[name.strip()] = body.strip()
    if "root" not in rules:
        raise GBNFSyntaxError("no root rule")
    return rules


def _char(text: str, i: int) -> tuple[str, int]:
    """One (possibly escaped) character of a literal or class at ``i``."""
    if text[i] != "\\":
        return text[i], i + 1
    if i + 1 >= len(text):
        raise GBNFSyntaxError("dangling backslash")
    kind = text[i + 1]
    if kind in _ESCAPES:
        return _ESCAPES[kind], i + 2
    width = {"x": 2, "u": 4, "U": 8}.get(kind)
    if width is None:
        raise GBNFSyntaxError(f"unknown escape \\{kind}")
    return chr(int(text[i + 2 : i + 2 + width], 16)), i + 2 + width


class _Translator:
    def __init__(self, rules: dict[str, str]) -> None:
        self.rules = rules
        self.active: list[str] = []
        self.done: dict[str, str] = {}

    def rule(self, name: str) -> str:
        if name in self.done:
            return self.done[name]
        if name not in self.rules:
            raise GBNFSyntaxError(f"undefined rule {name!r}")
        if name in self.active:
            raise GBNFSyntaxError(f"rule {name!r} is recursive")
        self.active.append(name)
        pattern, end = self.alternatives(self.rules[name], 0)
        if end != len(self.rules[name]):
            raise GBNFSyntaxError(f"unexpected {self.rules[name][end:end + 10]!r} in {name}")
        self.active.pop()
        self.done[name] = pattern
        return pattern

    def alternatives(self, text: str, i: int) -> tuple[str, int]:
        options: list[str] = []
        while True:
            seq, i = self.sequence(text, i)
            options.append(seq)
            i = _skip(text, i)
            if i < len(text) and text[i] == "|":
                i += 1
                continue
            return ("(?:" + "|".join(options) + ")" if len(options) > 1 else options[0]), i

    def sequence(self, text: str, i: int) -> tuple[str, int]:
        parts: list[str] = []
        while True:
            i = _skip(text, i)
            if i >= len(text) or text[i] in "|)":
                return "".join(parts), i
            atom, i = self.atom(text, i)
            atom, i = _postfix(atom, text, i)
            parts.append(atom)

    def atom(self, text: str, i: int) -> tuple[str, int]:
        ch = text[i]
        if ch == '"':
            out, i = "", i + 1
            while i < len(text) and text[i] != '"':
                c, i = _char(text, i)
                out += c
            if i >= len(text):
                raise GBNFSyntaxError("unterminated literal")
            return "(?:" + re.escape(out) + ")", i + 1
        if ch == "[":
            return _char_class(text, i)
        if ch == ".":
            return r"[\s\S]", i + 1
        if ch == "(":
            inner, i = self.alternatives(text, i + 1)
            if i >= len(text) or text[i] != ")":
                raise GBNFSyntaxError("unclosed group")
            return "(?:" + inner + ")", i + 1
        m = re.match(r"[A-Za-z][A-Za-z0-9_-]*", text[i:])
        if m is None:
            raise GBNFSyntaxError(f"unexpected {text[i:i + 10]!r}")
        return "(?:" + self.rule(m.group(0)) + ")", i + m.end()


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _char_class(text: str, i: int) -> tuple[str, int]:
    i += 1
    negate = i < len(text) and text[i] == "^"
    if negate:
        i += 1
    items: list[str] = []
    while i < len(text) and text[i] != "]":
        c, i = _char(text, i)
        if i + 1 < len(text) and text[i] == "-" and text[i + 1] != "]":
            hi, i = _char(text, i + 1)
            items.append(re.escape(c) + "-" + re.escape(hi))
        else:
            items.append(re.escape(c))
    if i >= len(text):
        raise GBNFSyntaxError("unclosed character class")
    return "[" + ("^" if negate else "") + "".join(items) + "]", i + 1


def _postfix(atom: str, text: str, i: int) -> tuple[str, int]:
    """``atom`` with the repetition written after it at ``i``, if any."""
    if i < len(text) and text[i] in "*+?":
        return atom + text[i], i + 1
    m = re.match(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}", text[i:])
    if m is None:
        return atom, i
    low, comma, high = m.group(1), m.group(2), m.group(3)
    return atom + "{" + low + ("," + (high or "") if comma else "") + "}", i + m.end()


def to_regex(grammar: str) -> re.Pattern[str]:
    """The language of ``grammar`` (from its ``root`` rule) as a compiled regex.

    Raises :class:`GBNFSyntaxError` for text outside the supported subset or a recursive
    grammar (which no regular expression matches exactly).
    """
    pattern = _Translator(parse_rules(grammar)).rule("root")
    return re.compile(pattern)


def accepts(grammar: str, text: str) -> bool:
    """Whether ``text`` is in the language of ``grammar`` (see :func:`to_regex`)."""
    return to_regex(grammar).fullmatch(text) is not None


def shortest(grammar: str) -> str:
    """The shortest text of the grammar's language, taking the first alternative and a
    letter (else a digit, else any allowed character) for every character class."""
    return _shortest(_sre_parse.parse(to_regex(grammar).pattern))


def _shortest(parsed: Any) -> str:
    out: list[str] = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            low, _high, item = arg
            out.append(_shortest(item) * low)
        elif name == "SUBPATTERN":
            out.append(_shortest(arg[-1]))
        elif name == "BRANCH":
            out.append(_shortest(arg[1][0]))
        elif name in ("IN", "ANY", "NOT_LITERAL"):
            out.append(_first_char(name, arg))
    return "".join(out)


def _first_char(name: str, arg: Any) -> str:
    if name == "ANY":
        pattern = r"[\s\S]"
    elif name == "NOT_LITERAL":
        pattern = f"[^{re.escape(chr(arg))}]"
    else:
        pattern = _sre_class(arg)
    allowed = re.compile(pattern)
    for c in string.ascii_lowercase + string.digits + string.printable:
        if allowed.fullmatch(c):
            return c
    raise GBNFSyntaxError("a character class that allows no printable character")


def _sre_class(items: Any) -> str:
    negate = False
    parts: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            parts.append(re.escape(chr(arg)))
        elif name == "RANGE":
            parts.append(f"{re.escape(chr(arg[0]))}-{re.escape(chr(arg[1]))}")
        elif name == "CATEGORY":
            parts.append({"CATEGORY_SPACE": r"\s", "CATEGORY_NOT_SPACE": r"\S",
                          "CATEGORY_DIGIT": r"\d"}.get(str(arg), r"\S"))
    return "[" + ("^" if negate else "") + "".join(parts) + "]"
