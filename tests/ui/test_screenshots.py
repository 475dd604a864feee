"""Render the main window (light and dark) with a long chat, and the settings dialog.

PNGs go to ``ASSISTANT_TEST_ARTIFACTS`` (default ``test-artifacts/``) for a human to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from assistant.agent.events import ContextChanged, ContextUsage, Notice
from assistant.config import Settings
from assistant.ui.notices import CompactionNotice

from .sample_chat import build_sample_chat, prune_event


def _settle(qtbot) -> None:  # type: ignore[no-untyped-def]
    qtbot.wait(150)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_main_window_screenshots(make_window, artifacts_dir: Path, theme: str) -> None:
    h = make_window(settings=Settings(theme=theme))
    w = h.window
    w.resize(1180, 860)
    chat_id, prune_ids = build_sample_chat(h.controller.store)
    w._refresh_chats()
    w.open_chat(chat_id)
    w.bridge.post(ContextChanged(prune_event(prune_ids)))
    w.bridge.post(
        ContextUsage(
            prompt_tokens=7420,
            window=8192,
            reserve=838,
            segments={
                "system": 310, "summary": 420, "conversation": 3900, "tool_outputs": 1200,
                "tools": 1590,
            },
        )
    )
    w.bridge.post(Notice("error", "The model failed: llama_decode returned -1"))
    _settle(h.qtbot)
    list(w.chat_view.cards.values())[-1].set_expanded(True)
    w.chat_view.scroll_to_bottom()
    _settle(h.qtbot)
    assert QApplication.instance().property("assistantTheme") == theme  # type: ignore[union-attr]
    bottom = artifacts_dir / f"main-window-{theme}.png"
    assert w.grab().save(str(bottom))
    notice = next(e for e in w.chat_view.entries() if isinstance(e, CompactionNotice))
    notice.set_expanded(True)
    _settle(h.qtbot)
    w.chat_view.ensureWidgetVisible(notice, 0, 40)
    _settle(h.qtbot)
    top = artifacts_dir / f"main-window-{theme}-compaction.png"
    assert w.grab().save(str(top))
    assert bottom.stat().st_size > 10_000 and top.stat().st_size > 10_000


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_settings_dialog_screenshots(make_window, artifacts_dir: Path, theme: str) -> None:
    h = make_window(settings=Settings(theme=theme))
    dialog = h.window.open_settings()
    dialog.resize(720, 600)
    for index in range(dialog.tabs.count()):  # each page, named by its tab
        dialog.tabs.setCurrentIndex(index)
        _settle(h.qtbot)
        name = "-".join(dialog.tabs.tabText(index).replace("&", "").lower().split())
        path = artifacts_dir / f"settings-{name}-{theme}.png"
        assert dialog.grab().save(str(path))
    spin = dialog.policy_spins[("local", "reserve")]
    spin.setValue(9000)
    [page] = [i for i in range(dialog.tabs.count()) if dialog.tabs.widget(i).isAncestorOf(spin)]
    dialog.tabs.setCurrentIndex(page)
    _settle(h.qtbot)
    assert dialog.grab().save(str(artifacts_dir / f"settings-invalid-{theme}.png"))
    dialog.reject()
