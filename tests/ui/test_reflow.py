"""The window reflows from 640 px wide to 2560 (issue 43, item 3): at 640x480, 1366x768 and
2560x1440, at 100 % and 200 % zoom, a chat with tool cards, code, a compaction, a prune and
notices shows nothing cut off (``layout_check.clipped``); a screenshot of each for a person
to look at goes to ``ASSISTANT_TEST_ARTIFACTS``."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from assistant.agent.events import ContextChanged, ContextUsage, Notice
from assistant.config import Settings

from .layout_check import clipped
from .sample_chat import build_sample_chat, prune_event

SIZES = [(640, 480), (1366, 768), (2560, 1440)]


def _fill(h) -> None:  # type: ignore[no-untyped-def]
    """The sample chat, with a prune, the context bar's figures and two notices."""
    w = h.window
    chat_id, prune_ids = build_sample_chat(h.controller.store)
    w._refresh_chats()
    w.open_chat(chat_id)
    w.bridge.post(ContextChanged(prune_event(prune_ids)))
    w.bridge.post(ContextUsage(
        prompt_tokens=7420, window=8192, reserve=838,
        segments={"system": 310, "summary": 420, "conversation": 3900,
                  "tool_outputs": 1200, "tools": 1590},
    ))
    w.bridge.post(Notice("warning", "This is a long notice that has to wrap onto more lines "
                                    "in a narrow window instead of running off its edge."))


def _settle(h) -> None:  # type: ignore[no-untyped-def]
    for _ in range(4):
        QApplication.processEvents()
        h.qtbot.wait(60)


@pytest.mark.parametrize("zoom", [100, 200])
def test_nothing_is_cut_off_from_640_to_2560_wide(make_window, artifacts_dir: Path, zoom: int
                                                  ) -> None:
    h = make_window(settings=Settings(theme="light", zoom=zoom))
    _fill(h)
    w = h.window
    for width, height in SIZES:
        w.resize(width, height)
        _settle(h)
        for card in w.chat_view.cards.values():
            card.set_expanded(True)
        w.chat_view.scroll_to_bottom()
        _settle(h)
        assert (w.width(), w.height()) == (width, height)  # not held wider by a minimum
        shot = artifacts_dir / f"reflow-{width}x{height}-zoom-{zoom}.png"
        assert w.grab().save(str(shot))
        problems = clipped(w)
        assert not problems, f"{width}x{height} at {zoom} %:\n" + "\n".join(problems)
