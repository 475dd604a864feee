"""Bringing a dropped file into the workspace: used in place when inside, else copied to
``dropped/`` (same content reused, another file with that name numbered)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from assistant.tools.workspace import SandboxError, Workspace

DROPPED_DIR = "dropped"


def import_file(workspace: Workspace, source: Path, *, max_bytes: int) -> tuple[Path, bool]:
    """The workspace path to read for ``source`` and whether it was copied; raises
    :class:`SandboxError` for folders, devices, too large or unreadable files."""
    try:
        st = source.stat()
    except OSError as exc:
        raise SandboxError(f"{source} cannot be opened: {exc.strerror or exc}.") from None
    if stat.S_ISDIR(st.st_mode):
        raise SandboxError(f"{source} is a folder; drop a file, or use /ls.")
    if not stat.S_ISREG(st.st_mode):
        raise SandboxError(f"{source} is not a regular file.")
    real = Path(os.path.realpath(source))
    with contextlib.suppress(SandboxError):
        return workspace.resolve(str(real), kind="file"), False
    if st.st_size > max_bytes:
        raise SandboxError(f"{source} is {st.st_size:,} bytes; the limit is {max_bytes:,}.")
    try:
        data = real.read_bytes()
    except OSError as exc:
        raise SandboxError(f"{source} cannot be read: {exc.strerror or exc}.") from None
    name = real.name
    counter = 2
    while True:
        rel = f"{DROPPED_DIR}/{name}"
        with workspace.open(rel, "parent", create=True) as place:
            exists = place.st is not None
        if not exists:
            shown, _existed = workspace.write_bytes(rel, data)
            return workspace.root.joinpath(*shown.split("/")), True
        same, shown = _same_content(workspace, rel, data)
        if same:
            return workspace.root.joinpath(*shown.split("/")), False
        name = f"{real.stem}-{counter}{real.suffix}"
        counter += 1


def _same_content(workspace: Workspace, rel: str, data: bytes) -> tuple[bool, str]:
    try:
        existing, shown = workspace.read_bytes(rel, len(data))
    except SandboxError:
        return False, rel
    return existing == data, shown
