"""The settings dialog's Speed tab: saved states shown with their size and deleted with a
click, chunk reuse and batch sizes saved, the calibration forgotten on request."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt

from assistant import paths
from assistant.llm.calibration import Calibration, CalibrationStore
from assistant.llm.kv_state import default_dir
from assistant.llm.llama_kv import PrefillConfig
from assistant.service.resume import engine_tuning


def _speed_tab(dialog):  # type: ignore[no-untyped-def]
    dialog.show_page(dialog.performance_page)
    return dialog.performance_page


def test_saved_states_are_listed_and_deleted(make_window, artifacts_dir: Path) -> None:  # type: ignore[no-untyped-def]
    h = make_window()
    h.backend.enqueue("Paris is the capital of France.")
    h.type_and_send("What is the capital of France?")
    h.wait_idle()
    # The state is copied by a job queued on the model's one worker after the reply: a job
    # queued after it ends after it, then the writer has it.
    h.controller.worker.submit(lambda: None).result(timeout=30)
    h.controller.saved_states.writer.flush(timeout=10)
    files = list(default_dir().glob("*.kvstate"))
    assert len(files) == 1
    dialog = h.window.open_settings()
    page = _speed_tab(dialog)
    dialog.resize(720, 640)
    assert "used by 1 saved chat state." in page.usage_label.text()
    assert page.clear_button.isEnabled()
    assert dialog.grab().save(str(artifacts_dir / "settings-speed.png"))
    h.qtbot.mouseClick(page.clear_button, Qt.MouseButton.LeftButton)
    assert page.usage_label.text().startswith("Deleted 1 saved chat state (")
    assert not list(default_dir().glob("*.kvstate"))
    assert not page.clear_button.isEnabled()
    dialog.reject()


def test_speed_settings_are_validated_and_saved(make_window) -> None:  # type: ignore[no-untyped-def]
    h = make_window()
    dialog = h.window.open_settings()
    page = _speed_tab(dialog)
    assert page.n_batch.text() == "measured" and page.state_cache_mb.value() == 2048
    assert page.chunk_reuse.isChecked()  # on by default (docs/PERFORMANCE.md)
    page.chunk_reuse.setChecked(False)
    page.state_cache_mb.setValue(512)
    page.n_batch.setValue(256)
    page.n_ubatch.setValue(128)
    page.resume_state.setChecked(False)
    assert page.server_chunk_reuse_min.value() == 32  # llama-server's own size, shown
    page.server_chunk_reuse_min.setValue(48)
    assert page.prompt_lookup.currentText() == "auto"
    page.prompt_lookup.setCurrentText("off")
    assert page.draft_model.text() == "auto"
    page.draft_model.setText("qwen2.5-coder-0.5b-instruct")
    assert page.prompt_form.currentText() == "auto"
    assert dialog.save_button.isEnabled()
    h.qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    saved = json.loads(paths.settings_file().read_text(encoding="utf-8"))["performance"]
    assert saved == {
        "resume_state": False, "state_cache_mb": 512, "chunk_reuse": False,
        "chunk_reuse_min": 64, "n_batch": 256, "n_ubatch": 128, "prompt_lookup": "off",
        "prompt_form": "auto", "server_chunk_reuse_min": 48,
        "draft_model": "qwen2.5-coder-0.5b-instruct",
    }
    assert not h.controller.settings.performance.chunk_reuse
    assert h.controller.settings.performance.prompt_lookup == "off"
    assert engine_tuning(h.controller.settings).draft_model == "qwen2.5-coder-0.5b-instruct"
    assert h.controller.settings.performance.server_chunk_reuse_min == 48
    assert h.controller.saved_states.cache.limit_bytes == 512 * 1024 * 1024
    assert not h.controller.saved_states.enabled


def test_measure_again_forgets_the_calibration(make_window) -> None:  # type: ignore[no-untyped-def]
    store = CalibrationStore()
    store.put("k", Calibration(PrefillConfig(1, 512, 512), 10.0, 9.0, 64, 1.0))
    h = make_window()
    dialog = h.window.open_settings()
    page = _speed_tab(dialog)
    h.qtbot.mouseClick(page.measure_button, Qt.MouseButton.LeftButton)
    assert store.get("k") is None
    assert "measured again on the next model load" in page.prefill_label.text()
    dialog.reject()
