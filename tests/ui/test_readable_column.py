"""Text keeps a comfortable width on a wide screen (issue 43): the messages, tool cards,
notices and the input are a centred column about 90 characters of the body font wide
(scaled with the zoom); narrower windows reflow as before. Screenshots at 800x560, 1366x768
and 2560x1440 of a chat with a code block, a long paragraph and a notice go to
``ASSISTANT_TEST_ARTIFACTS`` for a person to look at."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication, QWidget

from assistant.agent.events import Notice
from assistant.config import Settings
from assistant.conversation import Message
from assistant.ui.column import CODE_CHARS, char_width
from assistant.ui.markdown_view import CodeBlock, ProseLabel
from assistant.ui.message_widgets import MessageWidget
from assistant.ui.notices import NoticeWidget

from .layout_check import clipped
from .sample_chat import build_sample_chat

SIZES = [(800, 560), (1366, 768), (2560, 1440)]
LONG = (
    "A long paragraph reads best when its lines stay short enough for the eye to find the "
    "start of the next one. " * 6
).strip()


def _chat(h) -> None:  # type: ignore[no-untyped-def]
    """The sample chat (code block, tool cards, a compaction) with a long paragraph and a
    notice at the end."""
    w = h.window
    chat_id, _ids = build_sample_chat(h.controller.store)
    w._refresh_chats()
    w.open_chat(chat_id)
    w.chat_view.add_message(Message(role="user", content="Explain line length in a paragraph."))
    w.chat_view.add_message(Message(role="assistant", content=LONG))
    w.bridge.post(Notice("warning", "The reply was cut short. Press Continue to read the rest, "
                                    "or ask again with fewer words."))


def _settle(h) -> None:  # type: ignore[no-untyped-def]
    for _ in range(4):
        QApplication.processEvents()
        h.qtbot.wait(60)


def _chars(label: QWidget) -> float:
    """``label``'s width in characters of its font."""
    return label.width() / char_width(label)


def _span(widget: QWidget, within: QWidget) -> tuple[int, int]:
    """Left and right gaps between ``widget`` and the edges of ``within``."""
    left = widget.mapTo(within, QPoint(0, 0)).x()
    return left, within.width() - left - widget.width()


@pytest.mark.parametrize("zoom", [100, 200])
def test_message_text_has_a_readable_width_centred(make_window, artifacts_dir: Path,
                                                   zoom: int) -> None:
    h = make_window(settings=Settings(theme="light", zoom=zoom))
    _chat(h)
    w = h.window
    for width, height in SIZES:
        w.resize(width, height)
        _settle(h)
        w.chat_view.scroll_to_bottom()
        _settle(h)
        assert w.grab().save(str(artifacts_dir / f"readable-{width}x{height}-zoom-{zoom}.png"))
        assert not clipped(w), (width, zoom, clipped(w))
        viewport = w.chat_view.viewport()
        prose = [label for m in w.chat_view.message_widgets.values()
                 for label in m.body.findChildren(ProseLabel) if label.isVisible()]
        entries = [e for e in w.chat_view.entries()
                   if isinstance(e, MessageWidget | NoticeWidget) and e.isVisible()]
        assert prose and entries
        widest = max(_chars(label) for label in prose)
        assert widest <= 100, (width, zoom, widest)
        column = w.chat_view.column.width
        wide = viewport.width() >= column + 48
        for entry in entries:
            left, right = _span(entry, viewport)
            assert entry.width() <= column, (width, zoom, entry, entry.width(), column)
            if wide:  # centred, with the room left over on both sides
                assert abs(left - right) <= 2 and left > 24, (width, zoom, left, right)
        if wide:
            assert widest >= 80, (width, zoom, widest)  # the column, not a narrow one
            left, right = _span(w.input, w.centralWidget())
            assert w.input.width() <= column and left > 24 + 260 // 2, (left, right)
        else:
            # The window is narrower than the column: the text takes what there is.
            assert viewport.width() - max(e.width() for e in entries) <= 48 + 2


def test_the_column_follows_the_zoom_live(make_window) -> None:  # type: ignore[no-untyped-def]
    """Ctrl+= widens the column as it enlarges the font (the same ~90 characters), for the
    messages and the input alike; Ctrl+0 brings it back."""
    h = make_window(settings=Settings(theme="light"))
    _chat(h)
    w = h.window
    w.resize(2560, 1440)
    _settle(h)
    before, box = w.chat_view.column.width, w.input.width()
    bubble = next(iter(w.chat_view.message_widgets.values()))
    for _ in range(3):  # 110, 125, 150
        w.menus.zoom_in.trigger()
    _settle(h)
    assert h.controller.settings.zoom == 150
    after = w.chat_view.column.width
    assert 1.35 < after / before < 1.65, (before, after)
    assert before < bubble.width() <= after and box < w.input.width() <= after
    w.menus.zoom_reset.trigger()
    _settle(h)
    assert w.chat_view.column.width == before and bubble.width() <= before
    assert w.input.width() == box


@pytest.mark.parametrize("zoom", [100, 200])
def test_a_line_of_code_fits_the_column(make_window, zoom: int) -> None:  # type: ignore[no-untyped-def]
    """The column leaves room for code: a line of CODE_CHARS (80) characters shows without
    scrolling sideways, while prose stays within 100 characters."""
    h = make_window(settings=Settings(theme="light", zoom=zoom))
    _chat(h)
    w = h.window
    w.resize(2560, 1440)
    _settle(h)
    [editor] = [block.editor for m in w.chat_view.message_widgets.values()
                for block in m.findChildren(CodeBlock)]
    line = QFontMetrics(editor.font()).horizontalAdvance("0" * CODE_CHARS)
    assert editor.viewport().width() >= line, (editor.viewport().width(), line)
