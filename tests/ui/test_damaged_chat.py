"""A chat with a damaged line, from the window: it opens read-only with everything readable
shown and the damage named, a message typed into it is kept in the box, and Repair opens a
repaired copy where the chat goes on; the original file is never changed (issue 18,
item 4)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from assistant.sessions.store import SessionStore
from assistant.ui.notices import NoticeWidget
from tests.fakes.scripted import ScriptedBackend

from .sample_chat import build_sample_chat


def _damage(store: SessionStore, chat_id: str) -> tuple[Path, bytes]:
    path = store.path_of(chat_id)
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3][: len(lines[3]) // 2]  # line 4 cut in half
    data = b"\n".join(lines)
    path.write_bytes(data)
    return path, data


def _click(h, widget) -> None:  # type: ignore[no-untyped-def]
    h.qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def test_damaged_chat_opens_read_only_and_repair_continues_it(
    make_window, artifacts_dir: Path
) -> None:
    h = make_window(backend=ScriptedBackend(["Glad it is back."]))
    w = h.window
    w.resize(1180, 860)
    store = h.controller.store
    chat_id, _prunes = build_sample_chat(store)
    path, damaged = _damage(store, chat_id)
    w._refresh_chats()
    assert any(t.endswith("(damaged)") for t in w.sidebar.titles())

    item = w.sidebar.item_for(chat_id)
    assert item is not None
    rect = w.sidebar.list.visualItemRect(item)
    h.qtbot.mouseClick(w.sidebar.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert h.controller.chat.chat_id == chat_id
    assert w.damage_banner.isVisible()
    assert "line 4" in w.damage_banner.label.text()
    shown = len(h.controller.chat.conversation.messages)
    assert shown > 5  # everything readable is on screen
    h.qtbot.wait(100)
    assert w.grab().save(str(artifacts_dir / "damaged-chat-read-only.png"))

    # Typing into the read-only chat loses nothing and writes nothing.
    h.type_and_send("Is it fixed?")
    assert w.input.toPlainText() == "Is it fixed?"
    notices = [e for e in w.chat_view.entries() if isinstance(e, NoticeWidget)]
    assert "read-only" in notices[-1].label.text()
    assert path.read_bytes() == damaged
    assert h.backend.calls == []

    _click(h, w.damage_banner.repair_button)
    copy_id = h.controller.chat.chat_id
    assert copy_id != chat_id
    assert not w.damage_banner.isVisible()
    assert len(h.controller.chat.conversation.messages) == shown
    assert any(t.endswith("(repaired)") for t in w.sidebar.titles())

    # The kept text goes to the repaired copy, and the model answers there.
    w.input.setFocus()
    h.qtbot.keyClick(w.input, Qt.Key.Key_Return)
    h.wait_idle()
    contents = [m.content for m in h.controller.chat.conversation.messages]
    assert contents[-2:] == ["Is it fixed?", "Glad it is back."]
    assert path.read_bytes() == damaged  # the original is kept as it was
    assert b"Glad it is back." in store.path_of(copy_id).read_bytes()
    h.qtbot.wait(100)
    assert w.grab().save(str(artifacts_dir / "damaged-chat-repaired.png"))
