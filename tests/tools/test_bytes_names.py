"""File names that are not UTF-8 (issue 47, item 4): a Latin-1 ``caf\\xe9.txt`` in the
workspace. find_files with ``*`` and ``**`` never raises; list_dir, grep and find_files show
it with escapes; the name shown is a path every tool takes; nothing undecodable (no lone
surrogate) reaches the chat. Each runs with descriptors and with the path-string walk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import Runner

LATIN1 = b"caf\xe9.txt"
SHOWN = "caf\\xe9.txt"


def _bytes_tree(root: Path) -> None:
    base = os.fsencode(root)
    os.mkdir(base + b"/d\xff\xfe")
    with open(base + b"/" + LATIN1, "wb") as fh:
        fh.write(b"menu: croissant\n")
    with open(base + b"/d\xff\xfe/n\x1b[2Jote.md", "wb") as fh:
        fh.write(b"croissant again\n")
    (root / "plain.txt").write_text("croissant here too\n", encoding="utf-8")


def _valid(text: str) -> str:
    text.encode("utf-8")  # no lone surrogate: the chat file and the model take it
    assert "\x1b" not in text
    return text


@pytest.mark.parametrize("pattern", ["*", "**", "**/*", "*.txt", "caf*", "**/*.md"])
def test_find_files_with_any_pattern_never_raises(
    run: Runner, root: Path, mode: str, pattern: str
) -> None:
    _bytes_tree(root)
    result = run("find_files", pattern=pattern)
    assert not result.is_error, result.text
    _valid(result.text)
    if pattern in ("*", "**", "**/*", "*.txt", "caf*"):
        assert SHOWN in result.text.splitlines()
    if pattern in ("*", "**", "**/*", "**/*.md"):
        assert "d\\xff\\xfe/n\\x1b[2Jote.md" in result.text.splitlines()


def test_list_dir_and_grep_show_escapes(run: Runner, root: Path, mode: str) -> None:
    _bytes_tree(root)
    listing = _valid(run("list_dir").text)
    assert f"{SHOWN} (16 bytes)" in listing.splitlines()
    assert "d\\xff\\xfe/" in listing.splitlines()
    inner = _valid(run("list_dir", path="d\\xff\\xfe").text)
    assert "n\\x1b[2Jote.md (16 bytes)" in inner.splitlines()
    found = _valid(run("grep", pattern="croissant").text)
    assert f"{SHOWN}:1: menu: croissant" in found.splitlines()
    assert "d\\xff\\xfe/n\\x1b[2Jote.md:1: croissant again" in found.splitlines()


def test_a_shown_name_is_usable_as_a_path(run: Runner, root: Path, mode: str) -> None:
    _bytes_tree(root)
    read = run("read_file", path=SHOWN)
    assert not read.is_error, read.text
    assert "menu: croissant" in _valid(read.text)
    assert "croissant again" in run("read_file", path="d\\xff\\xfe/n\\x1b[2Jote.md").text
    assert run("grep", pattern="menu", path=SHOWN).text.startswith(f"{SHOWN}:1:")
    edited = run("edit_file", path=SHOWN, old_text="croissant", new_text="baguette")
    assert not edited.is_error, edited.text
    assert Path(os.fsdecode(os.fsencode(root) + b"/" + LATIN1)).read_bytes() == (
        b"menu: baguette\n"
    )
    # The name as a model may spell it back from JSON ("\udce9"): the same file.
    assert "baguette" in run("read_file", path=os.fsdecode(LATIN1)).text


def test_a_literal_backslash_name_is_found_as_it_is(run: Runner, root: Path, mode: str) -> None:
    (root / "caf\\xe9.txt").write_text("the literal one\n", encoding="utf-8")
    _bytes_tree(root)
    assert "the literal one" in run("read_file", path="caf\\xe9.txt").text


def test_a_missing_escaped_name_says_so_validly(run: Runner, root: Path, mode: str) -> None:
    result = run("read_file", path="nope\\xe9.txt")
    assert result.is_error
    assert "does not exist" in _valid(result.text)
