"""Deleting the last message of a branch: a switcher leads back to it.

The chat then ends at the message before, and nothing follows it in this version, so the
deleted message has no sibling: the view shows "this version ends here" with ``< 2/2``
under the last message; ``<`` shows the version with the deleted message (``1/2 >``), ``>``
comes back; sending continues the chat as a new version (the row goes, ``2/2`` on the new
message)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from assistant.ui.message_widgets import BranchEndRow, MessageWidget
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness


def _shown(h: Harness) -> list[tuple[str, str | None]]:
    """Each message on screen with its switcher's text (None: no switcher)."""
    out: list[tuple[str, str | None]] = []
    for w in h.window.chat_view.entries():
        if isinstance(w, MessageWidget):
            visible = w.branch_switcher.isVisibleTo(w)
            out.append((w.message.content, w.branch_switcher.label.text() if visible else None))
        elif isinstance(w, BranchEndRow):
            out.append(("(ends here)", w.switcher.label.text()))
    return out


def test_after_deleting_the_last_message_a_switcher_leads_back_to_it(
    make_window, artifacts_dir: Path
) -> None:
    h = make_window(backend=ScriptedBackend(["answer one", "answer two", "answer three"]))
    h.type_and_send("question one")
    h.wait_idle()
    h.type_and_send("question two")
    h.wait_idle()
    last = h.controller.chat.conversation.messages[-1]
    h.qtbot.mouseClick(h.window.chat_view.message_widgets[last.id].delete_button,
                       Qt.MouseButton.LeftButton)
    h.wait_idle()
    assert _shown(h) == [("question one", None), ("answer one", None), ("question two", None),
                         ("(ends here)", "2/2")]
    row = h.window.chat_view.end_row
    assert row is not None and "ends here" in row.label.text()
    h.qtbot.waitUntil(lambda: row.isVisible())
    h.window.resize(900, 560)
    h.qtbot.wait(50)
    assert h.window.grab().save(str(artifacts_dir / "branch-end-after-delete.png"))
    # < shows the version with the deleted reply; nothing is written by looking
    h.qtbot.mouseClick(row.switcher.prev_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    assert _shown(h) == [("question one", None), ("answer one", None), ("question two", None),
                         ("answer two", "1/2")]
    assert [m.content for m in h.controller.chat.conversation.messages][-1] == "question two"
    deleted = h.window.chat_view.message_widgets[last.id]
    assert not deleted.branch_switcher.prev_button.isEnabled()
    # > comes back to the version without it
    h.qtbot.mouseClick(deleted.branch_switcher.next_button, Qt.MouseButton.LeftButton)
    h.wait_idle()
    assert _shown(h)[-1] == ("(ends here)", "2/2")
    # Sending goes on from here: a new version of what follows "question two".
    h.type_and_send("question three")
    h.wait_idle()
    assert _shown(h)[-2:] == [("question three", "2/2"), ("answer three", None)]
    assert h.window.chat_view.end_row is None


def test_the_switcher_is_there_when_the_chat_is_opened_again(make_window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = make_window(backend=ScriptedBackend(["answer one"]))
    h.type_and_send("question one")
    h.wait_idle()
    h.window.menus.delete_message.trigger()  # Edit → Delete last message
    h.wait_idle()
    chat_id = h.controller.chat.chat_id
    assert chat_id is not None
    h.controller.new_chat()
    h.wait_idle()
    assert h.window.chat_view.end_row is None
    h.window.open_chat(chat_id)
    h.wait_idle()
    assert _shown(h) == [("question one", None), ("(ends here)", "2/2")]
