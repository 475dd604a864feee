"""Export never destroys a file: it is written beside the target and renamed into place, and
text that cannot be encoded is escaped (issue 18, item 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.atomicfile import write_atomically
from assistant.conversation import Message
from assistant.sessions import SessionStore

from .chatdata import fill_chat

SURROGATE_REPLY = "Here you go: \ud800 and \udfff, then text."


def _chat(store: SessionStore, *, big: bool = False) -> str:
    with store.create(title="Export me") as chat:
        fill_chat(chat.conversation)
        chat.conversation.append(Message(role="user", content="Say something odd."))
        chat.conversation.append(Message(role="assistant", content=SURROGATE_REPLY))
        if big:
            chat.conversation.append(Message(role="assistant", content="x" * 200_000))
        return chat.chat_id


@pytest.mark.parametrize("suffix", [".md", ".json"])
def test_lone_surrogates_are_escaped_over_an_existing_file(
    store: SessionStore, tmp_path: Path, suffix: str
) -> None:
    chat_id = _chat(store)
    folder = tmp_path / "exports"
    folder.mkdir()
    target = folder / f"chat{suffix}"
    target.write_text("the previous export\n", encoding="utf-8")
    written = store.export_to_file(chat_id, target)
    assert written == target
    data = target.read_bytes()
    data.decode("utf-8")  # valid UTF-8
    assert b"\\ud800" in data and b"\\udfff" in data
    assert sorted(p.name for p in folder.iterdir()) == [target.name]  # no temp files left
    if suffix == ".json":
        # In JSON the escape is the standard one: the reply reads back unchanged.
        doc = json.loads(data)
        assert SURROGATE_REPLY in [m["content"] for m in doc["messages"]]


def _fail_fsync(fd: int) -> None:
    raise OSError(28, "No space left on device")


def test_failed_exports_leave_every_existing_file_as_it_was(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each way an export can fail, for both formats, over a file that already exists:
    the target keeps its bytes (0 files emptied) and no temporary file is left."""
    chat_id = _chat(store)
    folder = tmp_path / "exports"
    folder.mkdir()
    targets = {suffix: folder / f"old{suffix}" for suffix in (".md", ".json")}
    for path in targets.values():
        path.write_bytes(b"precious earlier export\n")

    failures = 0
    # The disk fills while the data is flushed.
    with monkeypatch.context() as m:
        m.setattr(os, "fsync", _fail_fsync)
        for path in targets.values():
            with pytest.raises(OSError, match="No space left"):
                store.export_to_file(chat_id, path)
            failures += 1
    # The rename itself fails.
    with monkeypatch.context() as m:

        def fail_replace(src: object, dst: object, **_dir_fds: object) -> None:
            raise OSError(5, "Input/output error")

        m.setattr(os, "replace", fail_replace)
        for path in targets.values():
            with pytest.raises(OSError):
                store.export_to_file(chat_id, path)
            failures += 1
    # The folder cannot be written (skipped as root, who may write anyway).
    if os.geteuid() != 0:
        folder.chmod(0o500)
        try:
            for path in targets.values():
                with pytest.raises(PermissionError):
                    store.export_to_file(chat_id, path)
                failures += 1
        finally:
            folder.chmod(0o700)
    # A folder named like the target is never replaced.
    as_dir = folder / "adir.md"
    as_dir.mkdir()
    (as_dir / "inside.txt").write_text("keep", encoding="utf-8")
    with pytest.raises(IsADirectoryError):
        store.export_to_file(chat_id, as_dir)
    failures += 1
    assert (as_dir / "inside.txt").read_text(encoding="utf-8") == "keep"

    assert failures >= 5
    for path in targets.values():
        assert path.read_bytes() == b"precious earlier export\n"
    assert sorted(p.name for p in folder.iterdir()) == ["adir.md", "old.json", "old.md"]


_FSIZE_SCRIPT = """
import resource, signal, sys
from pathlib import Path
from assistant.sessions import SessionStore
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
store = SessionStore(Path(sys.argv[1]))
try:
    store.export_to_file(sys.argv[2], Path(sys.argv[3]))
except OSError as exc:
    print("failed:", exc)
else:
    print("written")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE")
def test_a_file_size_limit_mid_write_leaves_the_old_file(
    store: SessionStore, tmp_path: Path
) -> None:
    """A real short write (the process may not grow a file past 4 KB): the export fails
    with a clear error and the earlier 1 KB export is untouched."""
    chat_id = _chat(store, big=True)
    target = tmp_path / "chat.md"
    target.write_bytes(b"y" * 1024)
    done = subprocess.run(
        [sys.executable, "-c", _FSIZE_SCRIPT, str(store.root), chat_id, str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.startswith("failed:"), done.stdout + done.stderr
    assert "too large" in done.stdout.lower()
    assert target.read_bytes() == b"y" * 1024
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".chat")) == []


def test_writer_follows_a_symlink_and_keeps_permissions(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old", encoding="utf-8")
    real.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    assert write_atomically(link, "new \ud800") == real
    assert link.is_symlink()
    assert real.read_bytes() == b"new \\ud800"
    assert real.stat().st_mode & 0o777 == 0o640
