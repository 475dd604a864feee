"""The settings dialog checks the system prompt against the loaded model's window. On the
server engine the count is a ``/tokenize`` request: it is made on the model's worker, the
window never waits for it, and the refusal shows when the count is in (issue 42)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from assistant.config import Settings
from tests.fakes import server_kinds as kinds
from tests.fakes.openai_server import Answer, fake_openai_server

LONG = "Cite every file you used. " * 8_000  # ~200 KB


def test_a_servers_count_of_the_system_prompt_never_holds_the_window(
    make_window, qtbot, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    vllm = kinds.VLLM(max_model_len=8192)
    tokenize = vllm.routes[("POST", "/tokenize")]
    gate = threading.Event()
    held: list[int] = []

    def slow_tokenize(body: dict[str, Any]) -> Answer:
        """A slow link: the long prompt's count is answered when the test lets it."""
        if LONG in str(body.get("prompt", "")):
            held.append(1)
            gate.wait(60)
        return tokenize(body)

    kind = {**vllm.kind(), "routes": {**vllm.routes, ("POST", "/tokenize"): slow_tokenize}}
    with fake_openai_server(lambda _messages: "Hello.", **kind) as server:
        settings = Settings(workspace=str(tmp_path / "ws"))
        settings.engine.server.base_url = server.url
        settings.engine.kind = "server"
        h = make_window(settings=settings)
        try:
            dialog = h.window.open_settings()
            dialog.tabs.setCurrentIndex(2)
            dialog.system_prompt.setPlainText(LONG)
            # The server holds the request while the window goes on: the dialog answered
            # at once and refuses nothing it does not know yet.
            qtbot.waitUntil(lambda: bool(held))
            assert dialog.save_button.isEnabled() and dialog.error_label.text() == ""
        finally:
            gate.set()
        qtbot.waitUntil(lambda: not dialog.save_button.isEnabled())
        text = dialog.error_label.text()
        assert text.startswith("System prompt: it is ")
        assert "of 8,192 tokens in local mode" in text
        assert dialog.system_prompt.property("invalid") is True
        dialog.system_prompt.setPlainText("Be brief.")
        qtbot.waitUntil(dialog.save_button.isEnabled)
        assert dialog.error_label.text() == ""
        dialog.reject()
