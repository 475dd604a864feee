"""The GBNF reader: what a grammar allows, as a regular expression."""

from __future__ import annotations

import pytest

from tests.fakes.gbnf import GBNFSyntaxError, accepts, to_regex

LIST = r'''
# a bulleted list of one to three short lines
root ::= item ("\n" item){0,2}
item ::= "- " [^\n\[\]-] [^\n\[\]]{0,9}
'''


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("- one", True),
        ("- one\n- two\n- three", True),
        ("- one\n- two\n- three\n- four", False),  # at most three items
        ("- 0123456789", True),
        ("- 01234567890", False),  # at most ten characters
        ("- [User]: hi", False),  # brackets are outside the class
        ("- - nested", False),  # an item cannot start with a dash
        ("- one\n", False),  # no trailing newline
        ("one", False),
    ],
)
def test_a_bounded_list(text: str, ok: bool) -> None:
    assert accepts(LIST, text) is ok


def test_literals_escapes_alternatives_and_repetitions() -> None:
    g = 'root ::= ("yes" | "no") "\\t" [a-c]+ "\\x41"? "\\"" [0-9]{2,}'
    assert accepts(g, 'yes\tab"12')
    assert accepts(g, 'no\tcccA"123')
    assert not accepts(g, 'no\td"12')
    assert not accepts(g, 'no\ta"1')
    assert accepts('root ::= . "x"', "\nx")


@pytest.mark.parametrize(
    ("grammar", "why"),
    [
        ("item ::= \"a\"", "no root rule"),
        ("root ::= undefined", "undefined rule"),
        ("root ::= \"a\" root?", "recursive"),
        ("root ::= \"\\q\"", "unknown escape"),
        ("root ::= \"open", "unterminated"),
        ("root ::= [abc", "unclosed character class"),
        ("root ::= (\"a\"", "unclosed group"),
        ("this is not a grammar", "not a rule"),
    ],
)
def test_errors_name_the_problem(grammar: str, why: str) -> None:
    with pytest.raises(GBNFSyntaxError, match=why):
        to_regex(grammar)


def test_shortest_writes_the_least_the_grammar_allows() -> None:
    from tests.fakes.gbnf import shortest

    assert shortest(LIST) == "- a"  # one item of one character
    assert accepts(LIST, shortest(LIST))
    assert shortest('root ::= "yes" | "no"') == "yes"
    assert shortest("root ::= [^\\x00]*") == ""
