"""The Engine page of the settings dialog and the window on a server engine, driven like a
user (clicks and typing), offscreen; the connection test runs against a real
llama-cpp-python server on loopback. Screenshots go to the test artifacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt

from assistant import paths
from assistant.agent.events import ContextUsage
from assistant.config import Settings
from assistant.llm.openai_backend import ConnectionReport
from assistant.llm.registry import load_registry
from assistant.secrets import SecretStore
from assistant.ui.context_bar import ESTIMATE_NOTE
from assistant.ui.settings_dialog import SettingsDialog
from assistant.ui.welcome_view import OFFLINE_INTRO
from bench.local_server import LocalServer, free_port


def _dialog(qtbot, settings: Settings | None = None) -> SettingsDialog:  # type: ignore[no-untyped-def]
    dialog = SettingsDialog(settings or Settings(), load_registry(), loaded_trained_context=8192)
    qtbot.addWidget(dialog)
    dialog.resize(760, 720)
    dialog.show()
    dialog.show_page(dialog.engine_page)
    return dialog


def _type(qtbot, edit, text: str) -> None:  # type: ignore[no-untyped-def]
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Delete)
    qtbot.keyClicks(edit, text)


def _choose_server(qtbot, dialog: SettingsDialog) -> None:  # type: ignore[no-untyped-def]
    page = dialog.engine_page
    qtbot.mouseClick(page.server_button, Qt.MouseButton.LeftButton)
    assert page.server_button.isChecked()
    assert page.server_box.isEnabled()


def _choose_embedded(qtbot, dialog: SettingsDialog) -> None:  # type: ignore[no-untyped-def]
    button = dialog.engine_page.embedded_button  # on its circle: the label is short
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton, pos=QPoint(8, button.height() // 2))
    assert button.isChecked()
    assert not dialog.engine_page.server_box.isEnabled()


def test_embedded_is_the_default_and_the_server_fields_wait(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = _dialog(qtbot)
    page = dialog.engine_page
    assert page.embedded_button.isChecked()
    assert not page.server_box.isEnabled()
    assert dialog.validate()


def test_a_server_needs_a_valid_address(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = _dialog(qtbot)
    page = dialog.engine_page
    _choose_server(qtbot, dialog)
    assert not dialog.save_button.isEnabled()
    assert "needs the server's address" in dialog.error_label.text()
    _type(qtbot, page.url, "localhost:8080")
    assert not dialog.save_button.isEnabled()
    assert "must start with http:// or https://" in dialog.error_label.text()
    assert page.url.property("invalid") is True
    _type(qtbot, page.url, "http://127.0.0.1:8080/v1")
    assert dialog.save_button.isEnabled(), dialog.error_label.text()
    result = dialog.result_settings()
    assert result is not None
    assert result.engine.kind == "server"
    assert result.engine.server.base_url == "http://127.0.0.1:8080"


def test_the_api_key_is_stored_on_save_and_never_in_the_settings_file(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = _dialog(qtbot)
    page = dialog.engine_page
    _choose_server(qtbot, dialog)
    _type(qtbot, page.url, "http://10.1.2.3:8000")
    _type(qtbot, page.api_key, "sk-typed-in-the-dialog")
    assert page.api_key.echoMode() == page.api_key.EchoMode.Password
    assert "never in the settings file" in page.key_help.text()
    qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert dialog.result() == dialog.DialogCode.Accepted
    assert page.key_changed
    assert SecretStore().get("http://10.1.2.3:8000") == "sk-typed-in-the-dialog"
    from assistant.config import save_settings

    settings = dialog.result_settings()
    assert settings is not None
    save_settings(settings)
    text = paths.settings_file().read_text(encoding="utf-8")
    assert "sk-typed-in-the-dialog" not in text
    assert json.loads(text)["engine"]["server"]["base_url"] == "http://10.1.2.3:8000"
    # Opened again: the key is known to be stored, and can be forgotten.
    again = _dialog(qtbot, settings)
    assert "a key is stored" in again.engine_page.api_key.placeholderText()
    qtbot.mouseClick(again.engine_page.forget_key, Qt.MouseButton.LeftButton)
    assert SecretStore().get("http://10.1.2.3:8000") is None


def test_with_a_server_the_windows_are_checked_against_the_servers_not_the_embedded_model(
    qtbot, artifacts_dir: Path  # type: ignore[no-untyped-def]
) -> None:
    dialog = _dialog(qtbot)  # the embedded model was trained on 8,192 tokens
    page = dialog.engine_page
    assert "more than this model was trained on (8,192)" in dialog.notes_label.text()
    _choose_server(qtbot, dialog)
    _type(qtbot, page.url, "http://127.0.0.1:8080")
    # The server's window is not known yet: nothing is capped by the embedded model's.
    assert dialog.validate()
    assert dialog.trained_context() is None
    assert not dialog.notes_label.isVisible()
    assert "8,192" not in dialog.effective_note.text()
    assert "In effect for the server" in dialog.effective_note.text()
    # The window typed is the server's: the modes are capped to it, and the notes say so.
    _type(qtbot, page.window_tokens.lineEdit(), "32768")
    assert page.window_tokens.value() == 32_768
    assert dialog.trained_context() == 32_768
    notes = dialog.notes_label.text()
    assert "Standard mode › Context window is 131,072 tokens, more than the server's window " \
        "(32,768)" in notes
    assert "Local mode" not in notes  # 10,000 fits in 32,768
    assert "trained on" not in notes
    qtbot.wait(50)
    assert dialog.grab().save(str(artifacts_dir / "settings-engine-window.png"))
    # Back to the embedded engine: its own trained length applies again.
    _choose_embedded(qtbot, dialog)
    assert dialog.trained_context() == 8192
    assert "more than this model was trained on (8,192)" in dialog.notes_label.text()


def test_the_window_a_connection_test_found_caps_the_modes(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = _dialog(qtbot)
    page = dialog.engine_page
    _choose_server(qtbot, dialog)
    _type(qtbot, page.url, "http://127.0.0.1:8080")
    report = ConnectionReport(
        url="http://127.0.0.1:8080", server="llama.cpp server", model="big.gguf",
        models=("big.gguf",), window=4096, window_source="the server's /props",
        exact_counts=True, counting="the server's /tokenize", native_tools=False,
        known_window=4096,
    )
    with qtbot.waitSignal(page.tested):
        page._relay.done.emit(report)  # what the test thread sends when it is done
    assert page.model_id() == "big.gguf"
    assert dialog.trained_context() == 4096
    assert "more than the server's window (4,096)" in dialog.notes_label.text()
    # Another address: what was found there says nothing about this one.
    _type(qtbot, page.url, "http://127.0.0.1:9090")
    assert dialog.trained_context() is None
    assert not dialog.notes_label.isVisible()


def test_a_connected_servers_window_applies_until_its_settings_change(qtbot) -> None:  # type: ignore[no-untyped-def]
    settings = Settings()
    settings.engine.server.base_url = "http://127.0.0.1:8080"
    settings.engine.kind = "server"
    dialog = SettingsDialog(settings, load_registry(), loaded_trained_context=4096)
    qtbot.addWidget(dialog)
    dialog.show()
    page = dialog.engine_page
    assert dialog.trained_context() == 4096  # the server the app is connected to
    assert "more than the server's window (4,096)" in dialog.notes_label.text()
    _type(qtbot, page.url, "http://127.0.0.1:9090")
    assert dialog.trained_context() is None
    # The embedded model is not capped by the server's window.
    _choose_embedded(qtbot, dialog)
    assert dialog.trained_context() == 8192


@pytest.mark.integration
def test_test_connection_shows_model_window_and_exact_counts(
    qtbot, llama_server: LocalServer, artifacts_dir: Path  # type: ignore[no-untyped-def]
) -> None:
    dialog = _dialog(qtbot)
    page = dialog.engine_page
    _choose_server(qtbot, dialog)
    _type(qtbot, page.url, llama_server.url)
    with qtbot.waitSignal(page.tested, timeout=300_000) as got:
        qtbot.mouseClick(page.test_button, Qt.MouseButton.LeftButton)
    page.wait_for_test()
    text = page.result.text()
    assert got.args[0] is page.report
    assert f"llama-cpp-python server at {llama_server.url}" in text
    assert f"Model: {llama_server.model}" in text
    assert "Window: 10,000 tokens (the server does not say" in text
    assert "Token counts: exact" in text
    assert "Tool calls: the app's text protocol" in text
    # The models the server lists fill the list (short names, full ids behind them).
    assert page.model.count() == 1
    assert page.model.currentText() == llama_server.model.name
    assert page.model_id() == str(llama_server.model)
    assert dialog.validate()
    qtbot.wait(100)
    shot = artifacts_dir / "settings-engine-server.png"
    assert dialog.grab().save(str(shot))
    result = dialog.result_settings()
    assert result is not None and result.engine.server.model == str(llama_server.model)


def test_test_connection_with_nothing_there_names_the_address(qtbot, artifacts_dir: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = _dialog(qtbot)
    page = dialog.engine_page
    _choose_server(qtbot, dialog)
    url = f"http://127.0.0.1:{free_port()}"
    _type(qtbot, page.url, url)
    with qtbot.waitSignal(page.tested, timeout=60_000):
        qtbot.mouseClick(page.test_button, Qt.MouseButton.LeftButton)
    page.wait_for_test()
    assert f"Cannot reach the server at {url}" in page.result.text()
    assert page.result.property("failed") is True
    assert page.test_button.isEnabled()
    qtbot.wait(100)
    assert dialog.grab().save(str(artifacts_dir / "settings-engine-unreachable.png"))


@pytest.mark.integration
def test_the_window_chats_through_a_server(
    make_window, llama_server: LocalServer, artifacts_dir: Path, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    settings = Settings(workspace=str(tmp_path / "workspace"))
    settings.engine.server.base_url = llama_server.url
    settings.engine.kind = "server"
    settings.sampling.max_reply_tokens = 16
    settings.sampling.temperature = 0.0
    h = make_window(settings=settings, wait=False)
    h.wait_ready(timeout=300_000)
    assert llama_server.model.stem in h.window.model_label.text()
    h.type_and_send("What is the capital of France?")
    h.wait_idle(timeout=300_000)
    messages = h.controller.chat.conversation.messages
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[1].content.strip()
    label = h.window.context_bar.label.text()
    assert not label.startswith("≈")  # exact counts from the server
    h.window.resize(1100, 760)
    h.qtbot.wait(150)
    assert h.window.grab().save(str(artifacts_dir / "main-window-server-engine.png"))


def test_estimated_counts_are_marked_in_the_context_bar(make_window, artifacts_dir: Path) -> None:  # type: ignore[no-untyped-def]
    h = make_window()
    bar = h.window.context_bar
    h.window.bridge.post(ContextUsage(prompt_tokens=3100, window=8192, reserve=838,
                                      segments={"system": 400, "conversation": 2700},
                                      estimated=True))
    h.window.bridge.flush()
    h.qtbot.waitUntil(lambda: bar.usage is not None)
    assert bar.label.text().startswith("≈ 3,100 / 8,192")
    assert ESTIMATE_NOTE in bar.toolTip()
    assert bar.grab().save(str(artifacts_dir / "context-bar-estimate.png"))


def test_a_window_whose_server_is_not_there_keeps_what_is_typed(
    make_window, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    settings = Settings(workspace=str(tmp_path / "workspace"))
    settings.engine.server.base_url = url
    settings.engine.kind = "server"
    h = make_window(settings=settings, wait=False)
    h.qtbot.waitUntil(lambda: h.controller.model.state == "failed", timeout=60_000)
    h.window.bridge.flush()
    assert h.window.model_banner.isVisible()
    banner = h.window.model_banner_label.text()
    assert "The server engine is not available" in banner and url in banner
    h.window.error_box.close()
    # The welcome page does not claim that nothing leaves the machine: it names the server.
    intro = h.window.welcome.intro.text()
    assert url in intro and "sent to that server" in intro
    assert "nothing you type" not in intro
    h.type_and_send("Hello, is anyone there?")
    assert h.controller.queue == ["Hello, is anyone there?"]
    assert h.window.queue_label.text() == "1 message queued (sent when the model has connected)"
    # Back to the embedded engine: the page says it is offline again.
    embedded = h.controller.settings.model_copy(deep=True)
    embedded.engine.kind = "embedded"
    h.controller.apply_settings(embedded)
    h.window.bridge.flush()
    assert h.window.welcome.intro.text() == OFFLINE_INTRO


@pytest.mark.integration
def test_a_server_started_after_the_window_answers_what_waited_on_retry(
    make_window, embedded_model_path: Path, artifacts_dir: Path, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = Settings(workspace=str(tmp_path / "workspace"))
    settings.engine.server.base_url = url
    settings.engine.kind = "server"
    settings.sampling.max_reply_tokens = 16
    settings.sampling.temperature = 0.0
    h = make_window(settings=settings, wait=False)
    h.qtbot.waitUntil(lambda: h.controller.model.state == "failed", timeout=60_000)
    h.window.bridge.flush()
    window = h.window
    assert window.model_banner.isVisible()
    assert f"Cannot reach the server at {url}" in window.model_banner_label.text()
    assert "press Retry" in window.model_banner_label.text()
    assert window.model_label.text() == "no server"
    assert window.choose_model_button.text() == "Server settings…"
    assert url in window.welcome.intro.text()
    window.error_box.close()
    h.type_and_send("What is the capital of France?")
    assert h.controller.queue == ["What is the capital of France?"]
    window.resize(1100, 760)
    h.qtbot.wait(150)
    assert window.grab().save(str(artifacts_dir / "main-window-server-unreachable.png"))
    # The banner's settings button opens the Engine page, where the address can be fixed.
    h.qtbot.mouseClick(window.choose_model_button, Qt.MouseButton.LeftButton)
    dialog = window.settings_dialog
    assert dialog is not None and dialog.current_page() is dialog.engine_page
    assert dialog.engine_page.url.text() == url
    dialog.reject()
    # The server comes up at that address; Retry connects and the waiting message is sent.
    server = LocalServer(embedded_model_path, n_ctx=1024, threads=1, port=port,
                         log_path=tmp_path / "server.log")
    server.start()
    try:
        h.qtbot.mouseClick(window.retry_button, Qt.MouseButton.LeftButton)
        h.wait_ready(timeout=300_000)
        h.wait_idle(timeout=300_000)
        messages = h.controller.chat.conversation.messages
        assert [m.role for m in messages] == ["user", "assistant"]
        assert messages[0].content == "What is the capital of France?"
        assert messages[1].content.strip()
        assert not window.model_banner.isVisible()
        label = window.model_label.text()
        assert label.startswith(embedded_model_path.stem + " · ")
        assert f"· 127.0.0.1:{port} ·" in label and label.endswith(" ctx")
    finally:
        server.stop()
