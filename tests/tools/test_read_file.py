"""read_file: text, line ranges, the size cap with its marker, binary and non-UTF-8 files."""

from __future__ import annotations

import re
from pathlib import Path

from assistant.conversation import ToolCall
from assistant.tools.base import ToolContext, ToolLimits
from assistant.tools.registry import ToolRegistry

from .conftest import Runner


def test_reads_a_small_file(run: Runner, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    result = run("read_file", path="a.txt")
    assert not result.is_error
    assert result.text == "a.txt (3 lines)\none\ntwo\nthree"


def test_line_range(run: Runner, root: Path) -> None:
    (root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)), encoding="utf-8")
    result = run("read_file", path="a.txt", start_line=3, end_line=5)
    assert result.text.splitlines()[0] == "a.txt (lines 3-5 of 10)"
    assert result.text.splitlines()[1:4] == ["line 3", "line 4", "line 5"]
    assert "5 more lines after line 5" in result.text


def test_range_past_the_end_is_an_error(run: Runner, root: Path) -> None:
    (root / "a.txt").write_text("x\n", encoding="utf-8")
    result = run("read_file", path="a.txt", start_line=5)
    assert result.is_error and "1 lines" in result.text
    assert run("read_file", path="a.txt", start_line=0).is_error  # validation: ge=1


def test_reversed_range_is_an_error(run: Runner, root: Path) -> None:
    (root / "a.txt").write_text("a\nb\nc\n", encoding="utf-8")
    assert run("read_file", path="a.txt", start_line=3, end_line=2).is_error


def test_large_file_is_cut_with_a_marker_that_says_how_to_continue(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    lines = [f"row {i:05d} " + "x" * 40 for i in range(1, 2001)]
    (root / "big.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    small = ToolContext(ctx.workspace, ToolLimits(max_output_chars=2_000), ctx.cancel)
    result = registry.run(ToolCall(name="read_file", arguments={"path": "big.txt"}), small)
    assert not result.is_error
    assert len(result.text) < 2_400
    marker = re.search(r"start_line=(\d+)", result.text)
    assert marker is not None
    assert "of 2,000" in result.text
    following = int(marker.group(1))
    # The marker points exactly at the first line not shown.
    assert f"row {following - 1:05d}" in result.text
    assert f"row {following:05d}" not in result.text
    nxt = registry.run(
        ToolCall(name="read_file", arguments={"path": "big.txt", "start_line": following}), small
    )
    assert nxt.text.splitlines()[1].startswith(f"row {following:05d}")


def test_one_huge_line_is_cut(registry: ToolRegistry, ctx: ToolContext, root: Path) -> None:
    (root / "min.js").write_text("a" * 50_000, encoding="utf-8")
    small = ToolContext(ctx.workspace, ToolLimits(max_output_chars=1_000), ctx.cancel)
    result = registry.run(ToolCall(name="read_file", arguments={"path": "min.js"}), small)
    assert len(result.text) < 1_300
    assert "50,000 characters" in result.text


def test_binary_file_is_reported_not_dumped(run: Runner, root: Path) -> None:
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    result = run("read_file", path="img.png")
    assert result.is_error
    assert "binary" in result.text
    assert "IHDR" not in result.text


def test_non_utf8_file_is_reported(run: Runner, root: Path) -> None:
    (root / "latin.txt").write_bytes("café crème".encode("latin-1"))
    result = run("read_file", path="latin.txt")
    assert result.is_error
    assert "not UTF-8" in result.text and "0xe9" in result.text


def test_bom_is_dropped_and_empty_file_reported(run: Runner, root: Path) -> None:
    (root / "bom.txt").write_bytes(b"\xef\xbb\xbfhi\n")
    assert run("read_file", path="bom.txt").text == "bom.txt (1 lines)\nhi"
    (root / "empty.txt").write_text("", encoding="utf-8")
    assert run("read_file", path="empty.txt").text == "empty.txt is empty."


def test_oversized_file_is_refused(registry: ToolRegistry, ctx: ToolContext, root: Path) -> None:
    (root / "big.log").write_text("y" * 5_000, encoding="utf-8")
    tiny = ToolContext(ctx.workspace, ToolLimits(max_file_bytes=1_000), ctx.cancel)
    result = registry.run(ToolCall(name="read_file", arguments={"path": "big.log"}), tiny)
    assert result.is_error and "grep" in result.text


def test_missing_file(run: Runner) -> None:
    result = run("read_file", path="nope.txt")
    assert result.is_error and "does not exist" in result.text


def test_alias_file_path_is_accepted(run: Runner, root: Path) -> None:
    (root / "a.txt").write_text("x\n", encoding="utf-8")
    assert not run("read_file", file_path="a.txt").is_error


def test_a_cut_read_says_why_and_how_to_read_the_rest(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "notes.txt").write_text("".join(f"line {i} " + "y" * 60 + "\n" for i in range(1, 80)))
    small = ToolContext(ctx.workspace, ToolLimits(max_output_chars=2_000), ctx.cancel)
    result = registry.run(ToolCall(name="read_file", arguments={"path": "notes.txt"}), small)
    header = result.text.splitlines()[0]
    assert header.startswith("notes.txt (lines 1-") and "of 79, cut to fit" in header
    last = int(header.split("-")[1].split(" ")[0])
    note = result.text.splitlines()[-1]
    assert "at most 2,000 characters" in note and "context window" in note
    assert f"/read notes.txt {last + 1}-79" in note
    assert f"start_line={last + 1}" in note
