"""/export from the window: odd model text is escaped, a failed export says so and leaves
the earlier file as it was (issue 18, item 5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assistant.ui.notices import NoticeWidget
from tests.fakes.scripted import ScriptedBackend


def _notices(h) -> list[NoticeWidget]:  # type: ignore[no-untyped-def]
    return [w for w in h.window.chat_view.entries() if isinstance(w, NoticeWidget)]


def test_export_of_a_reply_with_lone_surrogates(make_window, tmp_path: Path) -> None:
    h = make_window(backend=ScriptedBackend(["Broken \ud800 text"]))
    h.type_and_send("Hello")
    h.wait_idle()
    target = tmp_path / "out.md"
    target.write_text("earlier export", encoding="utf-8")
    h.controller.submit(f"/export {target}")
    notice = _notices(h)[-1]
    assert notice.level == "info" and str(target) in notice.label.text()
    assert "Broken \\ud800 text" in target.read_text(encoding="utf-8")


def test_failed_export_keeps_the_old_file_and_says_why(
    make_window, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_window()
    h.type_and_send("Hello")
    h.wait_idle()
    target = tmp_path / "chat.json"
    target.write_text("earlier export", encoding="utf-8")

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", disk_full)  # the disk fills while the export is written
        h.controller.submit(f"/export {target}")
    notice = _notices(h)[-1]
    assert notice.level == "error" and notice.label.text().startswith("Export failed:")
    assert "No space left" in notice.label.text()
    assert target.read_text(encoding="utf-8") == "earlier export"
