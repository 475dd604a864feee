"""The chat list: search finds what was said (not only titles) and says when nothing
matches; long titles are cut with "…" (no sideways scrolling) and shown whole in the
tooltip; the rename dialog is wide enough for the title."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from assistant.service.chats import ChatSearch, snippet
from tests.fakes.scripted import ScriptedBackend

LONG_TITLE = (
    "Planning the spring trip to the Dolomites with the whole family and two dogs, "
    "including trains"
)


def _chat(h, text: str) -> str:  # type: ignore[no-untyped-def]
    h.qtbot.mouseClick(h.window.sidebar.new_button, Qt.MouseButton.LeftButton)
    h.type_and_send(text)
    h.wait_idle()
    assert h.controller.chat.chat_id is not None
    return h.controller.chat.chat_id


def test_search_finds_message_text_and_says_when_nothing_matches(make_window) -> None:
    backend = ScriptedBackend(
        ["Use a bowline knot for the mooring line.", "Sourdough needs a long proof."]
    )
    h = make_window(backend=backend)
    boat = _chat(h, "Which knot for the boat?")
    _chat(h, "How do I bake bread?")
    side = h.window.sidebar
    h.qtbot.keyClick(h.window.input, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    h.qtbot.keyClicks(side.search, "BOWLINE")  # in the assistant's reply, any case
    h.qtbot.waitUntil(lambda: len(side.titles()) == 1)
    item = side.item_for(boat)
    assert item is not None and not item.isHidden()
    assert "bowline knot for the mooring" in item.text()  # the words around the hit
    assert not side.no_match.isVisible()
    side.search.clear()
    h.qtbot.keyClicks(side.search, "quantum chromodynamics")
    h.qtbot.waitUntil(lambda: side.no_match.isVisible())
    assert side.titles() == []
    assert side.no_match.text() == "No chats match “quantum chromodynamics”."
    side.search.clear()  # cleared: everything again, without waiting
    assert len(side.titles()) == 2 and not side.no_match.isVisible()


def test_long_titles_are_cut_not_scrolled(make_window, artifacts_dir: Path) -> None:
    h = make_window()
    chat_id = _chat(h, "Hello")
    h.controller.chat.rename(chat_id, LONG_TITLE)
    side = h.window.sidebar
    # The rename reaches the sidebar through the bridge, behind events already queued.
    h.qtbot.waitUntil(lambda: (item := side.item_for(chat_id)) is not None
                      and item.toolTip().startswith(LONG_TITLE))
    item = side.item_for(chat_id)
    assert item is not None
    assert side.list.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    assert side.list.textElideMode() == Qt.TextElideMode.ElideRight
    assert not side.list.horizontalScrollBar().isVisible()
    dialog = side.ask_rename(chat_id)
    assert dialog is not None
    h.qtbot.wait(100)
    assert dialog.textValue() == LONG_TITLE
    line_edit = dialog.findChild(type(side.search))
    assert line_edit is not None
    assert line_edit.width() >= line_edit.fontMetrics().horizontalAdvance(LONG_TITLE)
    assert dialog.grab().save(str(artifacts_dir / "rename-dialog.png"))
    dialog.reject()


def test_search_reads_a_chat_again_only_when_it_changed(tmp_path: Path) -> None:
    assert snippet("one two three four", "THREE") == "one two three four"
    assert snippet("x " * 100 + "needle" + " y" * 100, "needle").startswith("…")
    search = ChatSearch()
    missing = tmp_path / "gone.jsonl"
    assert search.search({"a": missing}, "anything") == {}
