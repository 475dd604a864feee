"""list_dir, find_files and grep: success paths, caps and failures."""

from __future__ import annotations

from pathlib import Path

from assistant.conversation import ToolCall
from assistant.tools.base import ToolContext, ToolLimits
from assistant.tools.registry import ToolRegistry
from assistant.tools.walk import glob_matcher

from .conftest import Runner


def _tree(root: Path) -> None:
    (root / "docs").mkdir()
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "README.md").write_text("# Title\nhello world\n", encoding="utf-8")
    (root / "docs" / "guide.md").write_text("Hello again\nbye\n", encoding="utf-8")
    (root / "src" / "pkg" / "mod.py").write_text("def hello():\n    return 1\n", encoding="utf-8")
    (root / ".git" / "HEAD").write_text("hello from git\n", encoding="utf-8")
    (root / "blob.bin").write_bytes(b"hello\x00\x01")


def test_list_dir(run: Runner, root: Path) -> None:
    _tree(root)
    result = run("list_dir")
    lines = result.text.splitlines()
    assert lines[0] == "./ (5 entries)"
    assert lines[1:5] == [".git/", "docs/", "src/", "blob.bin (7 bytes)"]
    assert "README.md (20 bytes)" in lines


def test_list_dir_subfolder_empty_and_cap(
    run: Runner, registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "empty").mkdir()
    assert run("list_dir", path="empty").text == "empty/ is empty."
    for i in range(30):
        (root / f"f{i:02d}.txt").write_text("", encoding="utf-8")
    capped = ToolContext(ctx.workspace, ToolLimits(max_entries=10), ctx.cancel)
    result = registry.run(ToolCall(name="list_dir", arguments={"path": "."}), capped)
    assert "21 more entries not shown" in result.text


def test_list_dir_missing(run: Runner) -> None:
    assert run("list_dir", path="nowhere").is_error


def test_find_by_name_anywhere(run: Runner, root: Path) -> None:
    _tree(root)
    result = run("find_files", pattern="*.md")
    assert result.text.splitlines() == ["README.md", "docs/guide.md"]


def test_find_with_folder_pattern_and_path(run: Runner, root: Path) -> None:
    _tree(root)
    assert run("find_files", pattern="src/**/*.py").text == "src/pkg/mod.py"
    assert run("find_files", pattern="*.py", path="src").text == "src/pkg/mod.py"
    assert "HEAD" not in run("find_files", pattern="*").text  # .git is skipped


def test_find_no_match_and_cap(
    run: Runner, registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    assert "No files match" in run("find_files", pattern="*.xyz").text
    for i in range(15):
        (root / f"n{i}.txt").write_text("", encoding="utf-8")
    capped = ToolContext(ctx.workspace, ToolLimits(max_matches=5), ctx.cancel)
    result = registry.run(ToolCall(name="find_files", arguments={"pattern": "*.txt"}), capped)
    assert "10 more files match" in result.text
    assert run("find_files", pattern=" ").is_error


def test_glob_semantics() -> None:
    assert glob_matcher("*.py").match("a/b/c.py")
    assert glob_matcher("src/*.py").match("src/x.py")
    assert not glob_matcher("src/*.py").match("src/a/x.py")
    assert glob_matcher("src/**/*.py").match("src/x.py")
    assert glob_matcher("src/**/*.py").match("src/a/b/x.py")
    assert glob_matcher("f?.[tc]xt").match("f1.txt")
    assert not glob_matcher("f[!1].txt").match("f1.txt")


def test_grep_finds_lines_with_numbers(run: Runner, root: Path) -> None:
    _tree(root)
    result = run("grep", pattern="hello")
    lines = result.text.splitlines()
    assert "README.md:2: hello world" in lines
    assert "src/pkg/mod.py:1: def hello():" in lines
    assert not any(line.startswith((".git", "blob.bin")) for line in lines)
    assert "1 binary" in result.text


def test_grep_options(run: Runner, root: Path) -> None:
    _tree(root)
    assert "docs/guide.md:1: Hello again" in run("grep", pattern="hello", ignore_case=True).text
    only_py = run("grep", pattern="hello", glob="*.py").text
    assert only_py.splitlines() == ["src/pkg/mod.py:1: def hello():"]
    one_file = run("grep", pattern="bye", path="docs/guide.md")
    assert one_file.text == "docs/guide.md:2: bye"


def test_grep_bad_regex_and_no_match(run: Runner, root: Path) -> None:
    _tree(root)
    bad = run("grep", pattern="(unclosed")
    assert bad.is_error and "not a valid regular expression" in bad.text
    assert run("grep", pattern="zzz_nothing").text.startswith("No matches")


def test_grep_caps_matches_and_long_lines(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "many.txt").write_text("match " + "z" * 1000 + "\n" + "match\n" * 50, encoding="utf-8")
    capped = ToolContext(ctx.workspace, ToolLimits(max_matches=10, max_line_chars=50), ctx.cancel)
    result = registry.run(ToolCall(name="grep", arguments={"pattern": "match"}), capped)
    assert "41 more matches not shown" in result.text
    assert "more characters]" in result.text
    assert len(result.text.splitlines()[0]) < 120


def test_cancelled_search_stops(registry: ToolRegistry, ctx: ToolContext, root: Path) -> None:
    _tree(root)
    assert ctx.cancel is not None
    ctx.cancel.cancel()
    result = registry.run(ToolCall(name="grep", arguments={"pattern": "x"}), ctx)
    assert result.is_error and "cancelled" in result.text


def test_long_outputs_are_cut_at_the_cap_with_a_note_on_how_to_narrow(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    for i in range(60):
        (root / f"{'long_file_name_' * 3}{i:03d}.txt").write_text("needle here\n", encoding="utf-8")
    small = ToolContext(ctx.workspace, ToolLimits(max_output_chars=500), ctx.cancel)
    notes = {
        "list_dir": ({}, "[Listing cut; use find_files with a pattern to narrow it.]"),
        "find_files": ({"pattern": "*.txt"}, "[List cut; use a narrower pattern.]"),
        "grep": ({"pattern": "needle"}, "[Output cut.]"),
    }
    for tool, (arguments, note) in notes.items():
        result = registry.run(ToolCall(name=tool, arguments=arguments), small)
        assert not result.is_error, tool
        assert note in result.text, tool
        shown = result.text.partition("\n" + note)[0]
        assert len(shown) == 500, tool  # exactly the cap, then the note
