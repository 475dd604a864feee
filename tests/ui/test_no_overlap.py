"""No transient overlapping rows (issue 43, item 7): right after a chat switch and right
after a compaction, before the event loop runs again, the transcript's entries are laid
out one under the other (screenshots of those very moments for a person to look at)."""

from __future__ import annotations

import itertools
from pathlib import Path

from PySide6.QtWidgets import QWidget

from assistant.agent.events import ContextChanged
from assistant.compaction.events import CompactionFinished
from assistant.ui.chat_view import ChatView
from assistant.ui.message_widgets import MessageWidget
from tests.fakes.scripted import ScriptedBackend

from .sample_chat import build_sample_chat
from .test_context_and_compaction import LOREM_SUMMARY, _long_chat


def _overlaps(view: ChatView) -> list[str]:
    """Entries whose top is above the previous entry's bottom (or one line high while they
    hold more)."""
    out: list[str] = []
    entries: list[QWidget] = view.entries()
    out += [f"{type(e).__name__} not shown" for e in entries if not e.isVisibleTo(view)]
    stale = [w for w in view.widget().findChildren(MessageWidget)
             if w.isVisibleTo(view) and w not in entries]
    out += [f"a message of the chat before ({w.message.content[:20]!r}) still shown"
            for w in stale]
    for before, after in itertools.pairwise(entries):
        if after.geometry().top() < before.geometry().bottom():
            out.append(f"{type(after).__name__} at {after.y()} over "
                       f"{type(before).__name__} ending at {before.geometry().bottom()}")
    return out


def test_a_chat_switch_shows_no_overlapping_rows(make_window, artifacts_dir: Path) -> None:
    h = make_window()
    h.type_and_send("A short chat")
    h.wait_idle()
    short = h.controller.chat.chat_id
    chat_id, _ids = build_sample_chat(h.controller.store)
    h.window._refresh_chats()
    h.window.open_chat(chat_id)  # the switch, as a click in the list does it
    assert h.window.grab().save(str(artifacts_dir / "chat-switch-at-once.png"))
    assert _overlaps(h.window.chat_view) == []
    h.qtbot.wait(100)
    assert _overlaps(h.window.chat_view) == []
    assert short is not None
    h.window.open_chat(short)
    assert _overlaps(h.window.chat_view) == []


def test_right_after_a_compaction_no_rows_overlap(make_window, artifacts_dir: Path) -> None:
    backend = ScriptedBackend()
    h = make_window(backend=backend)
    _long_chat(h)
    backend.enqueue(LOREM_SUMMARY)
    seen: list[list[str]] = []

    def at_once(event: object) -> None:  # runs after the window's own slot, before a paint
        if isinstance(getattr(event, "event", None), CompactionFinished):
            seen.append(_overlaps(h.window.chat_view))
            h.window.grab().save(str(artifacts_dir / "compaction-at-once.png"))

    h.window.bridge.on(ContextChanged, at_once)
    h.type_and_send("/compact")
    h.wait_idle()
    assert seen == [[]]
