"""The settings dialog: validation with reasons, effective values, persistence, reload."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from assistant import paths
from assistant.config import Mode, Settings
from assistant.llm.registry import load_registry
from assistant.ui.performance_page import SpeedHooks
from assistant.ui.settings_dialog import SettingsDialog


def _dialog(qtbot, settings: Settings | None = None) -> SettingsDialog:  # type: ignore[no-untyped-def]
    dialog = SettingsDialog(settings or Settings(), load_registry(), loaded_trained_context=8192)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def _type_into(qtbot, spin, text: str) -> None:  # type: ignore[no-untyped-def]
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, text)


def test_defaults_are_valid_and_effective_values_are_shown(qtbot) -> None:
    dialog = _dialog(qtbot)
    assert dialog.validate()
    assert dialog.save_button.isEnabled()
    # local window 10,000 capped by the model's 8,192, the rest scaled
    assert dialog.effective_labels["window"].text() == "8,192"
    assert dialog.effective_labels["reserve"].text() == "838"
    assert "scaled" in dialog.effective_note.text()
    assert dialog.policy_spins[("standard", "window")].value() == 131_072


def test_policy_that_does_not_fit_is_refused_with_the_reason(qtbot) -> None:
    dialog = _dialog(qtbot)
    _type_into(qtbot, dialog.policy_spins[("local", "reserve")], "9000")
    assert not dialog.save_button.isEnabled()
    assert dialog.result_settings() is None
    text = dialog.error_label.text()
    assert "Local mode" in text and "must fit in the Context window (10,000)" in text
    assert "Reserve for the reply + Keep recent (unsummarized) + Summary budget" in text
    assert "keep_recent" not in text and "summary_budget" not in text
    assert dialog.policy_spins[("local", "window")].property("invalid") is True
    _type_into(qtbot, dialog.policy_spins[("local", "reserve")], "1024")
    assert dialog.save_button.isEnabled() and dialog.error_label.text() == ""


def test_out_of_range_values_show_pydantic_messages(qtbot) -> None:
    dialog = _dialog(qtbot)
    _type_into(qtbot, dialog.policy_spins[("standard", "window")], "0")
    assert "greater than or equal to 1" in dialog.error_label.text()
    _type_into(qtbot, dialog.policy_spins[("standard", "window")], "131072")
    dialog.temperature.setValue(3.0)
    assert "Temperature" in dialog.error_label.text()
    assert "less than or equal to 2" in dialog.error_label.text()
    assert dialog.temperature.property("invalid") is True
    assert not dialog.save_button.isEnabled()


def test_model_choice_shows_context_size_and_license(qtbot) -> None:
    dialog = _dialog(qtbot)
    index = dialog.model_combo.findData("gemma-3-270m")
    dialog.model_combo.setCurrentIndex(index)
    info = dialog.model_info.text()
    assert "32,768" in info and "Gemma Terms of Use" in info and "MB" in info
    assert dialog.model_combo.itemText(dialog.model_combo.count() - 1) == "Choose a GGUF file…"


def test_choosing_a_gguf_path(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / "custom.gguf"
    model.write_bytes(b"GGUF")
    dialog = _dialog(qtbot)
    dialog.set_model_path(str(model))
    result = dialog.result_settings()
    assert result is not None and result.model == str(model)
    assert "custom.gguf" in dialog.model_info.text()


def test_save_persists_and_reloads_the_model(make_window) -> None:
    calls: list[tuple[str, int]] = []
    from tests.fakes.scripted import ScriptedBackend

    backend = ScriptedBackend()

    def factory(model: str, n_ctx: int, _threads: int) -> ScriptedBackend:
        calls.append((model, n_ctx))
        return backend

    h = make_window(factory=factory)
    assert calls == [("smollm2-135m-instruct", 8192)]
    dialog = h.window.open_settings()
    dialog.temperature.setValue(0.7)
    dialog.model_combo.setCurrentIndex(dialog.model_combo.findData("gemma-3-270m"))
    dialog.mode_buttons["standard"].setChecked(True)
    h.qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    saved = json.loads(paths.settings_file().read_text(encoding="utf-8"))
    assert saved["sampling"]["temperature"] == 0.7
    assert saved["model"] == "gemma-3-270m" and saved["mode"] == "standard"
    h.wait_ready()
    assert calls[-1] == ("gemma-3-270m", 32_768)
    assert h.window.mode_label.text() == "Standard mode"


def test_cancel_changes_nothing(make_window) -> None:
    h = make_window()
    dialog = h.window.open_settings()
    dialog.temperature.setValue(1.5)
    dialog.reject()
    assert h.controller.settings.sampling.temperature == 0.2
    assert not paths.settings_file().exists()


def test_theme_switch_applies(make_window) -> None:
    from PySide6.QtWidgets import QApplication

    h = make_window()
    dialog = h.window.open_settings()
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    dialog.accept()
    assert QApplication.instance().property("assistantTheme") == "dark"  # type: ignore[union-attr]
    dialog = h.window.open_settings()
    dialog.theme.setCurrentIndex(dialog.theme.findData("light"))
    dialog.accept()
    assert QApplication.instance().property("assistantTheme") == "light"  # type: ignore[union-attr]


def test_an_unregistered_gguf_shows_the_trained_context_from_its_header(
    qtbot,
    tmp_path,
    embedded_model_path,  # type: ignore[no-untyped-def]
) -> None:
    alias = tmp_path / "downloaded.gguf"
    alias.symlink_to(embedded_model_path)
    dialog = _dialog(qtbot, Settings(mode="standard"))
    dialog.set_model_path(str(alias))
    assert dialog.trained_context() == 8192
    assert "trained context 8,192" in dialog.model_info.text()
    assert dialog.effective_labels["window"].text() == "8,192"  # not 131,072


def test_a_system_prompt_too_large_for_the_loaded_model_is_refused_at_save(qtbot) -> None:  # type: ignore[no-untyped-def]
    from tests.fakes.scripted import ScriptedBackend

    count = ScriptedBackend().count
    dialog = SettingsDialog(
        Settings(), load_registry(), loaded_trained_context=8192, count_tokens=count
    )
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.save_button.isEnabled()
    # Windows beyond the trained length: saved, with a note that they are capped.
    assert dialog.notes_label.isVisible()
    assert "Local mode › Context window is 10,000 tokens" in dialog.notes_label.text()
    dialog.tabs.setCurrentIndex(2)
    dialog.system_prompt.setPlainText("Cite every file you used. " * 8_000)  # ~200 KB
    assert not dialog.save_button.isEnabled()
    assert dialog.result_settings() is None
    text = dialog.error_label.text()
    assert text.startswith("System prompt: it is ")
    assert "(2,048 of 8,192 tokens in local mode)" in text
    assert dialog.system_prompt.property("invalid") is True
    dialog.system_prompt.setPlainText("Be brief.")
    assert dialog.save_button.isEnabled() and dialog.error_label.text() == ""


def test_a_window_beyond_any_model_is_refused_with_the_dialogs_names(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = _dialog(qtbot)
    _type_into(qtbot, dialog.policy_spins[("standard", "window")], "2000000")
    assert not dialog.save_button.isEnabled()
    assert (
        "Standard mode › Context window: Input should be less than or equal to 1048576"
        in dialog.error_label.text()
    )


def test_settings_from_the_file_are_checked_when_the_model_loads(
    make_window,
    tmp_path,
    artifacts_dir,  # type: ignore[no-untyped-def]
) -> None:
    from assistant.ui.notices import NoticeWidget

    big = Settings(
        system_prompt="Cite every file you used. " * 8_000, workspace=str(tmp_path / "ws")
    )
    h = make_window(settings=big)
    texts = [e.label.text() for e in h.window.chat_view.entries() if isinstance(e, NoticeWidget)]
    assert any(t.startswith("System prompt: it is ") and "Settings (Ctrl+,)" in t for t in texts)
    # A message sent anyway fails with a reason that says what cannot be compacted.
    h.type_and_send("hello")
    h.wait_idle()
    texts = [e.label.text() for e in h.window.chat_view.entries() if isinstance(e, NoticeWidget)]
    assert any("What cannot be compacted: the system prompt" in t for t in texts)
    assert h.controller.chat.conversation.messages[0].content == "hello"  # kept
    dialog = h.window.open_settings()
    dialog.tabs.setCurrentIndex(2)
    h.qtbot.wait(100)
    assert not dialog.save_button.isEnabled()
    assert dialog.grab().save(str(artifacts_dir / "settings-system-prompt-refused.png"))
    dialog.reject()


def test_the_threads_setting_says_how_many_are_in_force(qtbot) -> None:  # type: ignore[no-untyped-def]
    from assistant.ui.settings_dialog import threads_help_text

    dialog = SettingsDialog(
        Settings(), load_registry(),
        speed=SpeedHooks(
            prefill_text="2 threads, n_batch 512, n_ubatch 512 (measured); chunk reuse off"
        ),
    )
    qtbot.addWidget(dialog)
    assert dialog.threads_help.text().startswith(
        "0 picks automatically — now 2 threads (measured on this computer)."
    )
    assert threads_help_text("1 threads, n_batch 256, n_ubatch 64 (set); chunk reuse off") == (
        "0 picks automatically — now 1 thread (set here)."
    )
    assert threads_help_text("").startswith("0 picks automatically: the CPU's cores")


def test_the_mode_buttons_are_the_modes_and_a_choice_is_saved_as_its_name(qtbot) -> None:
    """Issue 42: the dialog's mode choice lists ``Mode`` (one button each, in its order, titled
    as before) and hands the settings the enum, which saves as the plain name."""
    dialog = _dialog(qtbot, Settings(mode="standard"))
    assert list(dialog.mode_buttons) == list(Mode)
    assert [b.text() for b in dialog.mode_buttons.values()] == ["Local", "Standard"]
    assert dialog.selected_mode() is Mode.STANDARD
    dialog.mode_buttons[Mode.LOCAL].setChecked(True)
    data = dialog.collect()
    assert data["mode"] is Mode.LOCAL
    assert Settings.model_validate(data).model_dump(mode="json")["mode"] == "local"
