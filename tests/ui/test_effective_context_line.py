"""Settings (Model tab) and the models page card show the measured effective context."""

from __future__ import annotations

from pathlib import Path

from assistant.config import Settings
from assistant.llm.catalog import CatalogModel
from assistant.llm.context_probe import (
    EffectiveContext,
    EffectiveContextStore,
    file_model_id,
)
from assistant.llm.registry import load_registry
from assistant.ui.models_page import ModelCard
from assistant.ui.settings_dialog import SettingsDialog


def _store_smollm2(effective: int = 4_096) -> None:
    entry = load_registry().get("smollm2-135m-instruct")
    assert entry is not None
    key = f"{file_model_id(entry.file, entry.size)}|window=8192"
    EffectiveContextStore().put(
        key,
        EffectiveContext(
            model=entry.name,
            window=8192,
            effective=effective,
            accuracy={1024: [6, 6], 4096: [5, 6], 8192: [2, 6]},
            measured="2026-11-26T07:02:00+00:00",
        ),
    )


def _card(name: str) -> ModelCard:
    entry = load_registry().get(name)
    assert entry is not None
    model = CatalogModel(
        key=entry.name, display_name=entry.display_name, path=Path("/nowhere") / entry.file,
        source="registry", installed=True, size=entry.size, license=entry.license,
        context_length=entry.context_length,
    )
    return ModelCard(model, loaded=False)


def test_the_models_page_card_shows_the_stored_result(qtbot) -> None:  # type: ignore[no-untyped-def]
    before = _card("smollm2-135m-instruct")
    qtbot.addWidget(before)
    # Not probed here: the registry's size, measured with the answer benchmark.
    assert before.effective.text() == (
        "The history is kept within 2,048 tokens, where it answered best (answer benchmark; "
        "a long latest message may use the whole window); not measured on this computer yet"
    )
    _store_smollm2()
    card = _card("smollm2-135m-instruct")
    qtbot.addWidget(card)
    assert card.effective.text() == (
        "Uses about 4,096 tokens well (measured 2026-11-26); the history is kept within "
        "2,048 tokens, where it answered best (answer benchmark; a long latest message may "
        "use the whole window)"
    )
    other = _card("gemma-3-270m")  # another model's result is not shown for it
    qtbot.addWidget(other)
    assert other.effective.text() == "How much text this model reads well: not measured yet"
    assert "python -m" not in other.effective.text()  # no shell commands in the window


def test_settings_model_tab_shows_the_line_for_the_chosen_model(qtbot) -> None:  # type: ignore[no-untyped-def]
    _store_smollm2(2_048)
    dialog = SettingsDialog(Settings(), load_registry(), loaded_trained_context=8192)
    qtbot.addWidget(dialog)
    dialog.model_combo.setCurrentIndex(dialog.model_combo.findData("smollm2-135m-instruct"))
    assert dialog.effective_context_info.text() == (
        "Uses about 2,048 tokens well (measured 2026-11-26)"
    )
    dialog.model_combo.setCurrentIndex(dialog.model_combo.findData("gemma-3-270m"))
    assert "not measured yet" in dialog.effective_context_info.text()
