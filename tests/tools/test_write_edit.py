"""write_file and edit_file: creating, overwriting, exact single replacement, failures."""

from __future__ import annotations

from pathlib import Path

from assistant.conversation import ToolCall
from assistant.tools.base import ToolContext, ToolLimits
from assistant.tools.edit_file import EditFileArgs, EditFileTool
from assistant.tools.registry import ToolRegistry
from assistant.tools.write_file import WriteFileArgs, WriteFileTool

from .conftest import Runner


def test_write_creates_file_and_parents(run: Runner, root: Path) -> None:
    result = run("write_file", path="notes/today.md", content="# Today\n- item\n")
    assert not result.is_error
    assert result.text == "Created notes/today.md (2 lines, 15 characters)."
    assert (root / "notes" / "today.md").read_text(encoding="utf-8") == "# Today\n- item\n"


def test_write_overwrites_and_keeps_no_temp_files(run: Runner, root: Path) -> None:
    (root / "a.txt").write_text("old", encoding="utf-8")
    result = run("write_file", path="a.txt", content="new")
    assert result.text.startswith("Overwrote a.txt")
    assert (root / "a.txt").read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]


def test_write_keeps_newlines_exactly(run: Runner, root: Path) -> None:
    run("write_file", path="crlf.txt", content="a\r\nb\r\n")
    assert (root / "crlf.txt").read_bytes() == b"a\r\nb\r\n"


def test_write_too_large(registry: ToolRegistry, ctx: ToolContext) -> None:
    small = ToolContext(ctx.workspace, ToolLimits(max_write_chars=10), ctx.cancel)
    call = ToolCall(name="write_file", arguments={"path": "x.txt", "content": "y" * 11})
    assert registry.run(call, small).is_error


def test_write_missing_content_is_a_validation_error(run: Runner) -> None:
    result = run("write_file", path="x.txt")
    assert result.is_error
    assert "content" in result.text and "write_file(path: string, content: string)" in result.text


def test_edit_replaces_exactly_once(run: Runner, root: Path) -> None:
    (root / "code.py").write_text("a = 1\nb = 2\nc = 3\n", encoding="utf-8")
    result = run("edit_file", path="code.py", old_text="b = 2", new_text="b = 20\nbb = 21")
    assert not result.is_error
    assert "at line 2" in result.text
    assert (root / "code.py").read_text(encoding="utf-8") == "a = 1\nb = 20\nbb = 21\nc = 3\n"


def test_edit_not_found(run: Runner, root: Path) -> None:
    (root / "code.py").write_text("a = 1\n", encoding="utf-8")
    result = run("edit_file", path="code.py", old_text="z = 9", new_text="q")
    assert result.is_error and "not found" in result.text
    assert (root / "code.py").read_text(encoding="utf-8") == "a = 1\n"


def test_edit_not_found_shows_the_nearest_line_to_copy(run: Runner, root: Path) -> None:
    """Qwen2.5-Coder 1.5B asked to change the port wrote old_text "port = 8080" for the file's
    "PORT = 8080" and repeated the failed call; the error now shows the line to copy."""
    config = 'HOST = "localhost"\nPORT = 8080\nDEBUG = False\n'
    (root / "config.py").write_text(config, encoding="utf-8")
    result = run("edit_file", path="config.py", old_text="port = 8080", new_text="port = 9090")
    assert result.is_error
    assert "(line 2) is:\nPORT = 8080\nCopy it exactly" in result.text
    assert (root / "config.py").read_text(encoding="utf-8") == config
    unlike = run("edit_file", path="config.py", old_text="def main():", new_text="x")
    assert unlike.is_error and "nearest" not in unlike.text


def test_edit_not_found_nearest_spans_as_many_lines_as_old_text(run: Runner, root: Path) -> None:
    (root / "f.py").write_text("a = 1\ndef f(x):\n    return x + 1\nz = 0\n", encoding="utf-8")
    result = run("edit_file", path="f.py", old_text="def f(x):\n  return x+1", new_text="")
    assert "(line 2) is:\ndef f(x):\n    return x + 1\nCopy" in result.text


def test_edit_ambiguous(run: Runner, root: Path) -> None:
    (root / "code.py").write_text("x\nx\n", encoding="utf-8")
    result = run("edit_file", path="code.py", old_text="x", new_text="y")
    assert result.is_error and "2 times" in result.text
    assert (root / "code.py").read_text(encoding="utf-8") == "x\nx\n"


def test_edit_empty_old_text_and_missing_file(run: Runner, root: Path) -> None:
    (root / "a.txt").write_text("a", encoding="utf-8")
    assert run("edit_file", path="a.txt", old_text="", new_text="b").is_error
    assert run("edit_file", path="missing.txt", old_text="a", new_text="b").is_error


def test_edit_crlf_file_with_lf_old_text(run: Runner, root: Path) -> None:
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = run("edit_file", path="w.txt", old_text="one\ntwo", new_text="1\n2")
    assert not result.is_error
    assert (root / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_binary_file_refused(run: Runner, root: Path) -> None:
    (root / "b.bin").write_bytes(b"\x00\x01abc")
    assert run("edit_file", path="b.bin", old_text="abc", new_text="d").is_error


def test_alias_names(run: Runner, root: Path) -> None:
    (root / "a.txt").write_text("hello", encoding="utf-8")
    result = run("edit_file", file_path="a.txt", old_string="hello", new_string="bye")
    assert not result.is_error
    assert (root / "a.txt").read_text(encoding="utf-8") == "bye"


def test_approval_descriptions(ctx: ToolContext) -> None:
    write = WriteFileArgs(path="a.txt", content="x" * 3000)
    assert WriteFileTool().describe(write, ctx) == "Write 3,000 characters to a.txt"
    assert "1,000 more" in WriteFileTool().preview(write, ctx)
    edit = EditFileArgs(path="a.txt", old_text="a\nb", new_text="a\nc")
    diff = EditFileTool().preview(edit, ctx)
    assert "-b" in diff and "+c" in diff


def test_a_tool_report_is_not_written_into_a_file(run: Runner, root: Path) -> None:
    """Qwen2.5-Coder 0.5B wrote the result of its last write back into the file; the file
    keeps its text and the model is told why and what to do next."""
    created = run("write_file", path="notes_copy.txt", content="Team notes\nThursday 14:30\n")
    assert created.text == "Created notes_copy.txt (2 lines, 26 characters)."
    again = run("write_file", path="notes_copy.txt", content=created.text)
    assert again.is_error and "answer the user in words" in again.text
    assert (root / "notes_copy.txt").read_text(encoding="utf-8") == "Team notes\nThursday 14:30\n"
    edited = run("edit_file", path="notes_copy.txt", old_text="14:30", new_text="15:00")
    assert run("write_file", path="log.txt", content=edited.text).is_error
    assert not (root / "log.txt").exists()
    # Text that only mentions such a report is written.
    text = f"The tool said: {created.text}\n"
    assert not run("write_file", path="log.txt", content=text).is_error
    assert (root / "log.txt").read_text(encoding="utf-8") == text
