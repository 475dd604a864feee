"""Opening workspace paths through descriptors: links inside are followed, links out are
refused with a clear message, and what is opened stays what was checked (issue 18,
item 1). The same rules hold in the path-string fallback used where ``openat`` is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assistant.atomicfile import write_in
from assistant.tools.fsaccess import scandir
from assistant.tools.workspace import SandboxError, Workspace

from .conftest import Runner


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP SECRET\n", encoding="utf-8")
    return folder


def test_relative_link_climbing_out_is_named(
    mode: str, run: Runner, root: Path, outside: Path
) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "rel.txt").symlink_to("../../outside/secret.txt")
    result = run("read_file", path="sub/rel.txt")
    assert result.is_error
    assert result.text.startswith(
        "'sub/rel.txt' is outside the workspace: 'sub/rel.txt' is a link to "
        "../../outside/secret.txt."
    )


def test_links_that_stay_inside_are_followed(mode: str, run: Runner, root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "a.txt").write_text("A\n", encoding="utf-8")
    (root / "abs").symlink_to(root / "real", target_is_directory=True)  # absolute, inside
    (root / "real" / "up.txt").symlink_to("../real/a.txt")  # '..' that stays inside
    assert run("read_file", path="abs/a.txt").text == "real/a.txt (1 lines)\nA"
    assert run("read_file", path="real/up.txt").text.endswith("A")
    assert run("list_dir", path="abs").text.startswith("real/ (2 entries)")


def test_a_link_loop_is_refused(mode: str, run: Runner, root: Path) -> None:
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    result = run("read_file", path="a")
    assert result.is_error and "too many links in a row" in result.text


def test_writing_through_an_inside_link_writes_its_target(
    mode: str, run: Runner, root: Path
) -> None:
    (root / "real.txt").write_text("old", encoding="utf-8")
    (root / "alias.txt").symlink_to("real.txt")
    result = run("write_file", path="alias.txt", content="new")
    assert result.text.startswith("Overwrote real.txt")
    assert (root / "alias.txt").is_symlink()
    assert (root / "real.txt").read_text(encoding="utf-8") == "new"


def test_permissions_of_a_rewritten_file_are_kept(mode: str, run: Runner, root: Path) -> None:
    script = root / "run.sh"
    script.write_text("echo hi\n", encoding="utf-8")
    script.chmod(0o750)
    assert not run("edit_file", path="run.sh", old_text="hi", new_text="bye").is_error
    assert script.stat().st_mode & 0o777 == 0o750


def test_absolute_paths_under_a_symlinked_workspace(tmp_path: Path) -> None:
    real = tmp_path / "real-ws"
    real.mkdir()
    (real / "n.txt").write_text("x", encoding="utf-8")
    link = tmp_path / "ws-link"
    link.symlink_to(real, target_is_directory=True)
    ws = Workspace(link)
    for spelling in (link / "n.txt", real / "n.txt"):
        with ws.open(str(spelling), "file") as opened:
            assert opened.shown == "n.txt"
    with pytest.raises(SandboxError, match="outside the workspace"):
        ws.resolve(str(tmp_path / "other.txt"))


def test_a_name_swapped_for_a_link_after_the_check_is_replaced_not_followed(
    ws: Workspace, root: Path, outside: Path
) -> None:
    """The write step itself never follows a link: swap the name right before it."""
    (root / "a.txt").write_text("inside", encoding="utf-8")
    with ws.open("a.txt", "parent") as place:
        assert place.name == "a.txt"
        (root / "a.txt").unlink()
        (root / "a.txt").symlink_to(outside / "secret.txt")  # the race, made certain
        write_in(place.handle, place.name, b"written", None)
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "TOP SECRET\n"
    assert not (root / "a.txt").is_symlink()
    assert (root / "a.txt").read_text(encoding="utf-8") == "written"


def test_an_open_folder_stays_the_folder_that_was_checked(
    ws: Workspace, root: Path, outside: Path
) -> None:
    """After a folder is opened, swapping its name for a link to outside changes nothing
    for the tool that holds it."""
    (root / "d").mkdir()
    (root / "d" / "mine.txt").write_text("mine", encoding="utf-8")
    with ws.open("d", "dir") as folder:
        (root / "d").rename(root / "d-moved")
        (root / "d").symlink_to(outside, target_is_directory=True)
        names = [e.name for e in scandir(folder.handle)]
        write_in(folder.handle, "new.txt", b"n", None)
    assert names == ["mine.txt"]
    assert not (outside / "new.txt").exists()
    assert (root / "d-moved" / "new.txt").read_bytes() == b"n"


def test_devices_fifos_and_missing_parents(mode: str, run: Runner, root: Path) -> None:
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe")
        assert "not a regular file" in run("read_file", path="pipe").text
        assert "not a regular file" in run("write_file", path="pipe", content="x").text
    result = run("write_file", path="new/deep/dir/f.txt", content="x")
    assert result.text.startswith("Created new/deep/dir/f.txt")
    missing = run("read_file", path="nope/f.txt")
    assert missing.text.startswith("'nope' does not exist in the workspace")


def test_no_descriptors_are_leaked(ws: Workspace, root: Path, run: Runner) -> None:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc")
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "e" / "f.txt").write_text("hello\n", encoding="utf-8")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        run("read_file", path="d/e/f.txt")
        run("read_file", path="d/e/missing.txt")
        run("grep", pattern="hello")
        run("find_files", pattern="*.txt")
        run("list_dir", path="d/e")
        run("write_file", path="d/e/g.txt", content="x")
        run("edit_file", path="d/e/g.txt", old_text="x", new_text="y")
        run("read_file", path="../x")
    assert len(os.listdir("/proc/self/fd")) <= before
