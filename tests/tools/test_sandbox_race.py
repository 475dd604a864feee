"""The sandbox under a race: another process flips workspace paths between real files and
folders and symlinks to outside targets while the tools run (issue 18, item 1).

Target: 0 reads, writes, edits, listings or searches outside the workspace in 10,000 raced
tool calls. The racing process runs on its own core, so the swaps land between any two
system calls of a tool, which is what a check-then-use sandbox cannot survive (the old one
read the outside file up to 456 times in 2,000 calls and wrote outside up to 74 times).
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from assistant.conversation import ToolCall
from assistant.llm.base import CancelToken
from assistant.tools.base import ToolContext, ToolLimits
from assistant.tools.registry import ToolRegistry
from assistant.tools.workspace import Workspace

pytestmark = pytest.mark.slow

CALLS = 10_000
SECRET = "TOP SECRET outside-marker"
INSIDE = "INSIDE content\n"

#: Flips, as fast as it can until killed: a file <-> a symlink to the outside secret (also a
#: relative one), a link to an inside folder <-> a link to the outside folder, a folder <->
#: a symlink to a stand-in for /etc, a file <-> a folder.
_RACER = r"""
import os, shutil, sys
root, outside, etc = sys.argv[1], sys.argv[2], sys.argv[3]
os.chdir(root)
secret = os.path.join(outside, "secret.txt")
def attempt(*steps):
    try:
        for step in steps:
            step()
    except OSError:
        pass
def swap_in(path, make):
    tmp = path + ".racer-tmp"
    attempt(lambda: make(tmp), lambda: os.rename(tmp, path))
def write_file(path):
    with open(path, "w") as fh:
        fh.write("INSIDE content\n")
def dir_to_link(path, target):
    attempt(lambda: os.rename(path, path + ".racer-real"), lambda: os.symlink(target, path))
def link_to_dir(path):
    if os.path.isdir(path) and not os.path.islink(path):  # a tool made a folder meanwhile
        shutil.rmtree(path, ignore_errors=True)
    attempt(lambda: os.unlink(path))
    attempt(lambda: os.rename(path + ".racer-real", path))
print("ready", flush=True)
while True:
    # Every path leads outside for about half of the time, inside for the other half.
    swap_in("flip.txt", lambda t: os.symlink(secret, t))
    swap_in("sub/rel.txt", lambda t: os.symlink("../../outside/secret.txt", t))
    swap_in("flipdir", lambda t: os.symlink(outside, t))
    dir_to_link("etcdir", etc)
    attempt(lambda: os.unlink("shape.txt"), lambda: os.mkdir("shape.txt"))
    swap_in("flip.txt", write_file)
    swap_in("sub/rel.txt", write_file)
    swap_in("flipdir", lambda t: os.symlink("flipdir.real", t))
    link_to_dir("etcdir")
    attempt(lambda: os.rmdir("shape.txt"), lambda: write_file("shape.txt"))
"""


def _tree(root: Path, outside: Path, etc: Path) -> None:
    outside.mkdir()
    etc.mkdir()
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/sh outside-marker\n", encoding="utf-8")
    (etc / "hostname").write_text("host outside-marker\n", encoding="utf-8")
    (outside / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    (outside / "outside-only-name.txt").write_text(SECRET + "\n", encoding="utf-8")
    (root / "flip.txt").write_text(INSIDE, encoding="utf-8")
    (root / "shape.txt").write_text(INSIDE, encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "rel.txt").write_text(INSIDE, encoding="utf-8")
    for name in ("flipdir.real", "etcdir"):
        (root / name).mkdir()
        (root / name / "inner.txt").write_text(INSIDE, encoding="utf-8")
        (root / name / "secret.txt").write_text(INSIDE, encoding="utf-8")
    (root / "flipdir").symlink_to("flipdir.real")  # a link inside, swapped for one outside


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def _calls(i: int) -> list[tuple[str, dict[str, object]]]:
    return [
        ("read_file", {"path": "flip.txt"}),
        ("read_file", {"path": "sub/rel.txt"}),
        ("read_file", {"path": "flipdir/secret.txt"}),
        ("read_file", {"path": "etcdir/passwd"}),
        ("read_file", {"path": "shape.txt"}),
        ("list_dir", {"path": "flipdir"}),
        ("list_dir", {"path": "etcdir"}),
        ("grep", {"pattern": "SECRET|root:", "path": "."}),
        ("grep", {"pattern": "root", "path": "etcdir"}),
        ("grep", {"pattern": "SECRET", "path": "flip.txt"}),
        ("find_files", {"pattern": "*", "path": "flipdir"}),
        ("write_file", {"path": "flip.txt", "content": INSIDE}),
        ("write_file", {"path": f"flipdir/new-{i}.txt", "content": "new"}),
        ("write_file", {"path": "sub/rel.txt", "content": INSIDE}),
        ("write_file", {"path": "etcdir/hostname", "content": "pwned"}),
        ("edit_file", {"path": "flip.txt", "old_text": "SECRET", "new_text": "PWNED"}),
        ("edit_file", {"path": "flipdir/secret.txt", "old_text": "SECRET", "new_text": "X"}),
        ("edit_file", {"path": "sub/rel.txt", "old_text": "INSIDE", "new_text": "INSIDE"}),
    ]


def test_ten_thousand_raced_tool_calls_never_leave_the_workspace(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    etc = tmp_path / "etc"  # stands in for /etc: a test must never aim writes at the real one
    _tree(root, outside, etc)
    before = {**_snapshot(outside), **{f"etc/{k}": v for k, v in _snapshot(etc).items()}}
    registry = ToolRegistry.default()
    ctx = ToolContext(Workspace(root), ToolLimits(), CancelToken())

    racer = subprocess.Popen(
        [sys.executable, "-c", _RACER, str(root), str(outside), str(etc)],
        stdout=subprocess.PIPE,
        text=True,
    )
    outcomes: Counter[str] = Counter()
    leaks: list[str] = []
    try:
        assert racer.stdout is not None and racer.stdout.readline().strip() == "ready"
        done = 0
        i = 0
        while done < CALLS:
            for name, arguments in _calls(i):
                result = registry.run(ToolCall(name=name, arguments=arguments), ctx)
                done += 1
                outcomes[f"{name} {'error' if result.is_error else 'ok'}"] += 1
                if "outside-marker" in result.text or "outside-only-name" in result.text:
                    leaks.append(f"{name}({arguments}): {result.text[:200]}")
            i += 1
        assert racer.poll() is None, "the racing process died"
    finally:
        racer.kill()
        racer.wait()
        racer.stdout.close()

    after = {**_snapshot(outside), **{f"etc/{k}": v for k, v in _snapshot(etc).items()}}
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    print(f"\n{done:,} raced tool calls: {dict(sorted(outcomes.items()))}")
    print(f"outside reads: {len(leaks)}, outside files created or changed: {len(changed)}")
    assert leaks == []
    # Nothing outside was written, edited, created or replaced.
    assert changed == []
    # The race was real and the tools kept working: every kind of call both succeeded and
    # was refused (a path caught mid-swap) at least once.
    for name in ("read_file", "write_file", "edit_file", "list_dir", "grep", "find_files"):
        assert outcomes[f"{name} ok"] > 0, name
    for name in ("read_file", "write_file", "list_dir"):
        assert outcomes[f"{name} error"] > 0, name
    # The workspace holds only what the tools and the racer put there.
    leftovers = [p.name for p in root.rglob("*.tmp") if not p.name.endswith("racer-tmp")]
    assert leftovers == []


def test_a_refused_write_through_a_swapped_link_says_why(tmp_path: Path) -> None:
    """The messages the race produces are the sandbox's clear ones."""
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "d").symlink_to(outside, target_is_directory=True)
    registry = ToolRegistry.default()
    ctx = ToolContext(Workspace(root), ToolLimits(), CancelToken())
    result = registry.run(
        ToolCall(name="write_file", arguments={"path": "d/x.txt", "content": "x"}), ctx
    )
    assert result.is_error
    assert result.text.startswith("'d/x.txt' is outside the workspace: 'd' is a link to ")
    assert not (outside / "x.txt").exists()
