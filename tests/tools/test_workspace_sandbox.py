"""Every way out of the workspace is refused with an error result, never an exception."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from assistant.tools.workspace import SandboxError, Workspace

from .conftest import Runner

READERS = [
    ("read_file", "path"),
    ("list_dir", "path"),
    ("grep", "path"),
    ("write_file", "path"),
    ("edit_file", "path"),
    ("find_files", "path"),
]


def _args(tool: str, key: str, value: str) -> dict[str, str]:
    extra = {
        "grep": {"pattern": "x"},
        "write_file": {"content": "pwned"},
        "edit_file": {"old_text": "a", "new_text": "b"},
        "find_files": {"pattern": "*"},
    }.get(tool, {})
    return {key: value, **extra}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n", encoding="utf-8")
    return secret


ESCAPES = [
    "../secret.txt",
    "../../etc/passwd",
    "sub/../../secret.txt",
    "/etc/passwd",
    "/proc/self/environ",
    "/dev/zero",
    "a\x00b",
    "x" * 300,
    "/".join(["d" * 200] * 8),
]


@pytest.mark.parametrize(("tool", "key"), READERS)
@pytest.mark.parametrize("path", ESCAPES, ids=lambda p: repr(p)[:30])
def test_escapes_are_refused(
    mode: str, run: Runner, tool: str, key: str, path: str, outside: Path
) -> None:
    result = run(tool, **_args(tool, key, path))
    assert result.is_error
    assert "TOP SECRET" not in result.text
    assert "root:" not in result.text
    assert outside.read_text(encoding="utf-8") == "TOP SECRET\n"


def test_absolute_path_to_the_secret_is_refused(run: Runner, outside: Path) -> None:
    result = run("read_file", path=str(outside))
    assert result.is_error
    assert "outside the workspace" in result.text


def test_absolute_path_inside_is_allowed(run: Runner, root: Path) -> None:
    (root / "in.txt").write_text("hello\n", encoding="utf-8")
    result = run("read_file", path=str(root / "in.txt"))
    assert not result.is_error
    assert "hello" in result.text


def test_symlink_to_outside_file_is_refused(
    mode: str, run: Runner, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside)
    for result in (
        run("read_file", path="link.txt"),
        run("write_file", path="link.txt", content="x"),
        run("edit_file", path="link.txt", old_text="TOP", new_text="NOT"),
    ):
        assert result.is_error
        assert "outside the workspace" in result.text
    assert outside.read_text(encoding="utf-8") == "TOP SECRET\n"


def test_symlinked_folder_to_outside_is_refused(
    mode: str, run: Runner, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside.parent, target_is_directory=True)
    assert run("read_file", path="out/secret.txt").is_error
    assert run("list_dir", path="out").is_error
    assert run("write_file", path="out/new.txt", content="x").is_error
    assert not (outside.parent / "new.txt").exists()


def test_grep_and_find_do_not_follow_symlinks_out(
    mode: str, run: Runner, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside)
    (root / "out").symlink_to(outside.parent, target_is_directory=True)
    grep = run("grep", pattern="SECRET")
    assert "TOP SECRET" not in grep.text
    found = run("find_files", pattern="*secret*")
    assert "secret.txt" not in found.text.replace("link.txt", "")


def test_symlink_inside_workspace_is_fine(run: Runner, root: Path) -> None:
    (root / "real.txt").write_text("inside\n", encoding="utf-8")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert run("read_file", path="alias.txt").text.endswith("inside")


def test_dotdot_that_stays_inside_is_fine(run: Runner, root: Path) -> None:
    (root / "sub").mkdir()
    (root / "a.txt").write_text("A\n", encoding="utf-8")
    assert not run("read_file", path="sub/../a.txt").is_error


def test_directory_named_like_a_file(run: Runner, root: Path) -> None:
    (root / "notes.txt").mkdir()
    read = run("read_file", path="notes.txt")
    assert read.is_error and "is a directory" in read.text
    write = run("write_file", path="notes.txt", content="x")
    assert write.is_error
    assert (root / "notes.txt").is_dir()
    assert run("edit_file", path="notes.txt", old_text="a", new_text="b").is_error


def test_file_used_as_folder_is_refused(run: Runner, root: Path) -> None:
    (root / "f.txt").write_text("x", encoding="utf-8")
    assert run("list_dir", path="f.txt").is_error
    assert run("write_file", path="f.txt/inner.txt", content="x").is_error


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_and_grep_does_not_block(run: Runner, root: Path) -> None:
    os.mkfifo(root / "pipe")
    result = run("read_file", path="pipe")
    assert result.is_error and "not a regular file" in result.text
    # grep walks past the FIFO instead of blocking on it.
    assert "No matches" in run("grep", pattern="x").text


def test_socket_is_refused(run: Runner, root: Path, tmp_path: Path) -> None:
    path = root / "s.sock"
    if len(str(path)) > 100:
        pytest.skip("socket path too long for AF_UNIX")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        assert run("read_file", path="s.sock").is_error
    finally:
        sock.close()


def test_device_symlink_is_refused(run: Runner, root: Path) -> None:
    (root / "zero").symlink_to("/dev/zero")
    result = run("read_file", path="zero")
    assert result.is_error


def test_resolve_raises_sandbox_error_directly(ws: Workspace) -> None:
    with pytest.raises(SandboxError):
        ws.resolve("../x")
    with pytest.raises(SandboxError):
        ws.resolve("nul\x00")


def test_workspace_is_created_on_demand(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "ws"
    ws = Workspace(target)
    assert not target.exists()
    assert ws.root == target.resolve()
    assert target.is_dir()


def test_find_pattern_cannot_escape(run: Runner) -> None:
    assert run("find_files", pattern="../*").is_error
    assert run("find_files", pattern="/etc/*").is_error
