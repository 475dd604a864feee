"""Settings and the context bar from one source (issue 43, item 6): with a model measured
to use 2,048 tokens well, the Context tab's "In effect" column shows what the next model
call uses (the engine's policy), the same figures as the context bar's tooltip."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from assistant.config import Settings
from assistant.llm.context_probe import EffectiveContext, EffectiveContextStore, store_key
from tests.fakes.scripted import ScriptedBackend


def test_in_effect_is_what_the_next_call_uses_and_what_the_bar_says(make_window) -> None:
    backend = ScriptedBackend(window=8192, trained_context=8192)
    EffectiveContextStore().put(store_key(backend.info), EffectiveContext(
        model=backend.info.name, window=8192, effective=2048,
        accuracy={1024: [6, 6], 2048: [6, 6], 4096: [2, 6]},
        measured="2026-12-01T10:00:00+00:00",
    ))
    h = make_window(backend=backend)
    engine = h.controller.model.engine
    assert engine is not None
    used = engine.controller.policy()  # what the next model call is built with
    assert used.window == 2048  # the measured size
    dialog = h.window.open_settings()
    shown = {field: label.text() for field, label in dialog.effective_labels.items()}
    for field in ("window", "reserve", "keep_recent", "summary_budget", "protect"):
        assert shown[field] == f"{getattr(used, field):,}", (field, shown)
    bar = h.window.context_bar.tooltip_text()
    assert f"reserve {used.reserve:,}" in bar and f"keep recent {used.keep_recent:,}" in bar
    dialog.reject()
    QApplication.processEvents()


def _shown(make_window, mode: str, window: int, workspace: Path) -> tuple[dict[str, str], str]:  # type: ignore[no-untyped-def]
    """The Context tab's "In effect" column and the context bar's tooltip for a model of
    ``window`` tokens in ``mode``; both checked against what the next call uses."""
    backend = ScriptedBackend(window=window, trained_context=window)
    h = make_window(backend=backend, settings=Settings(mode=mode, workspace=str(workspace)))  # type: ignore[arg-type]
    engine = h.controller.model.engine
    assert engine is not None
    used = engine.controller.policy()
    dialog = h.window.open_settings()
    shown = {field: label.text() for field, label in dialog.effective_labels.items()}
    dialog.reject()
    QApplication.processEvents()
    bar = h.window.context_bar.tooltip_text()
    for field in ("window", "reserve", "keep_recent", "summary_budget", "protect"):
        assert shown[field] == f"{getattr(used, field):,}", (mode, window, field, shown)
    assert used.describe() in bar
    h.window.close()
    return shown, bar


@pytest.mark.parametrize("window", [1_024, 2_048, 4_096, 8_192, 32_768])
def test_local_and_standard_show_different_numbers_and_standard_keeps_more(
    make_window, window: int, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    """Issue 43: with a small window Local and Standard ended up alike and Standard kept less
    recent text (312 vs 614 at 2,048). The dialog and the bar show, for each mode, the same
    numbers; Standard's kept tail and protected tool output are the larger."""
    local, local_bar = _shown(make_window, "local", window, tmp_path / "workspace")
    standard, standard_bar = _shown(make_window, "standard", window, tmp_path / "workspace")

    def number(text: str) -> int:
        return int(text.replace(",", ""))

    for field in ("keep_recent", "protect"):
        assert number(standard[field]) > number(local[field]), (window, field, local, standard)
    assert f"keep recent {standard['keep_recent']}," in standard_bar
    assert f"keep recent {local['keep_recent']}," in local_bar
