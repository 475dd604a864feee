"""Settings and the context bar from one source (issue 43, item 6): with a model measured
to use 2,048 tokens well, the Context tab's "In effect" column shows what the next model
call uses (the engine's policy), the same figures as the context bar's tooltip."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

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
