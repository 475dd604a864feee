"""The text forms of issue 47: valid text to store, escaped names to show and use, and
terminal text with no control sequence left."""

from __future__ import annotations

import os

import pytest

from assistant.textsafe import (
    clean_text,
    decode_bytes,
    digest,
    name_from_shown,
    shown_name,
    terminal_text,
)


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("plain é", "plain é"),
        ("\ud83d\ude00", "\U0001f600"),  # a pair split in two is the character it spells
        ("a\ud83d", "a\ufffd"),
        ("\ude00b", "\ufffdb"),
        ("\udce9", "\ufffd"),
    ],
)
def test_clean_text_is_valid_unicode(text: str, clean: str) -> None:
    assert clean_text(text) == clean
    clean_text(text).encode("utf-8")


def test_invalid_bytes_decode_to_a_visible_replacement() -> None:
    assert decode_bytes(b"caf\xe9 \xff\xfe ok") == "caf\ufffd \ufffd\ufffd ok"


def test_digests_take_lone_surrogates_and_tell_them_apart() -> None:
    assert digest("a\ud83d") != digest("a\ud83e") != digest("a\ufffd")


@pytest.mark.parametrize(
    "raw",
    [b"caf\xe9.txt", b"plain.txt", b"\xff\xfe", b"tab\tand\nnewline", b"esc\x1b[2J",
     "c1\u0085x".encode(), "é.txt".encode(), b"back\\xe9slash"],
)
def test_a_shown_name_is_printable_and_leads_back_to_the_name(raw: bytes) -> None:
    name = os.fsdecode(raw)
    shown = shown_name(name)
    shown.encode("utf-8")
    assert shown.isprintable()
    if b"\\x" not in raw:  # a literal "\xe9" in a name is looked up as it is first
        assert os.fsencode(name_from_shown(shown)) == raw


def test_a_latin1_name_is_shown_with_its_byte() -> None:
    assert shown_name(os.fsdecode(b"caf\xe9.txt")) == "caf\\xe9.txt"
    assert shown_name("é.txt") == "é.txt"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
        ("\x1b[2J clear", "\\x1b[2J clear"),
        ("\x9b2J", "\\x9b2J"),  # C1 CSI
        ("line\nnext\ttab", "line\nnext\ttab"),
        ("crlf\r\nend\rx", "crlf\nend\\x0dx"),
        ("\x7f\x00", "\\x7f\\x00"),
        ("emoji \ud83d\ude00 and \ud83d alone", "emoji \U0001f600 and \\ud83d alone"),
        ("é ü 日本", "é ü 日本"),
    ],
)
def test_terminal_text_has_no_control_sequence(text: str, shown: str) -> None:
    out = terminal_text(text)
    assert out == shown
    out.encode("utf-8")
    assert not any(ch in out for ch in "\x1b\x07\x9b\x00\x7f\r")
