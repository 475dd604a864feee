"""grep and find_files cannot hang: RE2 patterns, bounded walks, Stop between steps
(issue 18, item 2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.conversation import ToolCall
from assistant.llm.base import CancelToken
from assistant.tools.base import ToolContext, ToolLimits
from assistant.tools.registry import ToolRegistry
from assistant.tools.search import CHUNK_BYTES, LineSearcher, PatternError

from .conftest import Runner


def _never() -> bool:
    return False


def test_the_catastrophic_pattern_from_the_report_just_answers(run: Runner, root: Path) -> None:
    """`(a+)+$` on a 40-character line ran for over a minute with Python's re."""
    (root / "a.txt").write_text("a" * 40 + "!\n" + "a" * 40 + "\n", encoding="utf-8")
    result = run("grep", pattern="(a+)+$")
    assert result.text == "a.txt:2: " + "a" * 40


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("foo(?=bar)", "look-ahead/look-behind"),
        ("(?<!x)y", "look-ahead/look-behind"),
        (r"(a)\1", "back-reference"),
        ("(?P<q>a)(?P=q)", "back-reference"),
        ("a{1000}{1000}", "too large or too complex"),
        ("((((a{100}){100}){100}){100})", "too large or too complex"),
        ("(unclosed", "not a valid regular expression"),
        ("x" * 2_001, "at most 2,000"),
    ],
)
def test_patterns_that_cannot_run_get_a_clear_message(
    run: Runner, root: Path, pattern: str, says: str
) -> None:
    (root / "a.txt").write_text("foobar\n", encoding="utf-8")
    result = run("grep", pattern=pattern)
    assert result.is_error
    assert says in result.text


def test_python_spellings_that_re2_lacks_still_work(run: Runner, root: Path) -> None:
    (root / "a.txt").write_text("end here\nnot\n", encoding="utf-8")
    assert run("grep", pattern=r"here\Z").text == "a.txt:1: end here"
    assert run("grep", pattern="(?P<w>here)").text == "a.txt:1: end here"
    assert run("grep", pattern="END", ignore_case=True).text == "a.txt:1: end here"


def test_a_match_never_spans_lines(root: Path, run: Runner) -> None:
    (root / "a.txt").write_text("a\nb\nab\r\n", encoding="utf-8")
    assert run("grep", pattern=r"a\s*b").text == "a.txt:3: ab"
    assert run("grep", pattern="[^x]+b").text == "a.txt:3: ab"


def _reference(pattern: str, text: str) -> list[tuple[int, str]]:
    """Python's re on each line (a final newline ends the last line, as in grep)."""
    rx = re.compile(pattern)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [(n, line) for n, line in enumerate(lines, 1) if rx.search(line)]


def test_line_numbers_across_chunk_boundaries() -> None:
    """Lines near each 1 MB step are found with the right numbers."""
    lines = []
    size = 0
    n = 0
    while size < 3 * CHUNK_BYTES + 5000:
        n += 1
        line = f"line {n} " + ("needle" if n % 997 == 0 else "hay") + " " + "x" * (n % 300)
        lines.append(line)
        size += len(line) + 1
    text = "\n".join(lines) + "\n"
    found = [
        (number, line.decode())
        for number, line in LineSearcher("needle").lines(text.encode(), _never)
    ]
    assert found == _reference("needle", text)
    assert len(found) > 10


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(alphabet="ab \t", max_size=12), max_size=12),
    st.sampled_from(["a", "^a", "b$", "a b", "^$", "a*", "[ab]{2}", r"\tb", "^(a|b)+$"]),
)
def test_same_lines_as_line_by_line_search(lines: list[str], pattern: str) -> None:
    text = "\n".join(lines)
    found = [(n, ln.decode()) for n, ln in LineSearcher(pattern).lines(text.encode(), _never)]
    expected = _reference(pattern, text) if text else []
    assert found == expected


def test_patterns_are_refused_before_any_file_is_read() -> None:
    with pytest.raises(PatternError):
        LineSearcher("(?=x)")


def test_glob_with_many_double_stars_on_a_deep_tree(run: Runner, root: Path) -> None:
    """`**/` ten times on a 30-deep folder took 32 s with a backtracking glob."""
    deep = root.joinpath(*[f"d{i}" for i in range(30)])
    deep.mkdir(parents=True)
    (deep / "target.txt").write_text("x", encoding="utf-8")
    (root / "d0" / "other.md").write_text("x", encoding="utf-8")
    result = run("find_files", pattern="**/" * 10 + "*.txt")
    assert result.text == "/".join(f"d{i}" for i in range(30)) + "/target.txt"
    assert run("find_files", pattern="**/" * 10 + "nothing-*").text.startswith("No files match")


def test_walks_stop_at_the_budget_with_a_note(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    for i in range(120):
        (root / f"f{i:03d}.txt").write_text("hello\n", encoding="utf-8")
    small = ToolContext(ctx.workspace, ToolLimits(max_search_entries=50), ctx.cancel)
    found = registry.run(ToolCall(name="find_files", arguments={"pattern": "*.txt"}), small)
    assert "stopped early because it visited 50 entries" in found.text
    assert len(found.text.splitlines()) < 60
    grep = registry.run(ToolCall(name="grep", arguments={"pattern": "hello"}), small)
    assert "stopped early" in grep.text


def test_deep_folders_beyond_the_limit_are_noted(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    deep = root.joinpath(*["d"] * 12)
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("x", encoding="utf-8")
    (root / "d" / "top.txt").write_text("x", encoding="utf-8")
    shallow = ToolContext(ctx.workspace, ToolLimits(max_search_depth=5), ctx.cancel)
    result = registry.run(ToolCall(name="find_files", arguments={"pattern": "*.txt"}), shallow)
    assert result.text.splitlines()[0] == "d/top.txt"
    assert "deeper than 5 levels were not searched" in result.text


class _StopAfter(CancelToken):
    """A Stop that arrives after the search has looked ``n`` times."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.left = n

    @property
    def cancelled(self) -> bool:
        self.left -= 1
        return self.left < 0


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("find_files", {"pattern": "*"}), ("grep", {"pattern": "(a+)+$"})],
)
def test_stop_is_seen_between_small_steps(
    ctx: ToolContext, registry: ToolRegistry, root: Path, tool: str, arguments: dict[str, str]
) -> None:
    for d in range(20):
        (root / f"dir{d}").mkdir()
        for f in range(20):
            (root / f"dir{d}" / f"f{f}.txt").write_text("a" * 40 + "\n", encoding="utf-8")
    token = _StopAfter(30)
    stopping = ToolContext(ctx.workspace, ctx.limits, token)
    result = registry.run(ToolCall(name=tool, arguments=arguments), stopping)
    assert result.is_error and result.text == "cancelled by the user"
    assert token.left == -1  # stopped at the first look after the Stop, not at the end
