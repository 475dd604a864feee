"""The Engine page of the settings dialog: the embedded model, or an OpenAI-compatible server.

The API key is kept in :class:`~assistant.secrets.SecretStore`, never in the settings file.
**Test connection** connects as the app would, on the thread of
:class:`~assistant.service.connection_test.ConnectionTest`, and fills the model list with
what the server has. The settings dialog validates what the page collects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QRadioButton,
    QSpinBox,
    QWidget,
)

from assistant.config import EngineSettings, Settings, normalize_base_url
from assistant.secrets import SecretStore, SecretStoreError
from assistant.service.catalog import model_label
from assistant.service.connection_test import ConnectionReport, ConnectionTest
from assistant.ui.parts import (
    Field,
    combo_box,
    field_value,
    form_layout,
    help_label,
    new_label,
    on_change,
    push_button,
    set_field,
    vbox,
)
from assistant.ui.theme import current_colors

TOOL_MODES = (
    ("The server's native tool calls when it has them", "auto"),
    ("Always the server's native tool calls", "native"),
    ("Always the app's text protocol", "text"),
)


class _Relay(QObject):
    """Carries the connection test's outcome from its thread to the GUI thread."""

    done = Signal(object)


class EnginePage(QWidget):
    """Edit :class:`EngineSettings`; emits :attr:`changed` on every edit."""

    changed = Signal()
    #: The connection test finished: a :class:`ConnectionReport` or an error message.
    tested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._secrets = SecretStore()
        self._settings = Settings()
        self._test = ConnectionTest()
        self._relay = _Relay(self)
        self._relay.done.connect(self._show_result)
        self.report: ConnectionReport | None = None

        outer = vbox(self, (16, 12, 16, 12), 10)
        self.kind_group = QButtonGroup(self)
        self.embedded_button = QRadioButton("Embedded model: runs in this app, no network")
        self.server_button = QRadioButton(
            "OpenAI-compatible server: llama-server, Ollama, LM Studio, vLLM, ..."
        )
        for button in (self.embedded_button, self.server_button):
            self.kind_group.addButton(button)
            outer.addWidget(button)
        outer.addWidget(help_label(
            "A server lets a stronger machine in your network, or another runtime on this one, "
            "run bigger models and windows, with the same context management. Nothing is sent "
            "anywhere but the address you set."
        ))

        self.server_box = QGroupBox("Server")
        form = form_layout(self.server_box, (8, 14))
        self.url = QLineEdit(placeholderText="http://127.0.0.1:8080")
        form.addRow("Address", self.url)
        self.api_key = QLineEdit(echoMode=QLineEdit.EchoMode.Password)
        self.forget_key = push_button("Forget stored key", self._forget_key)
        key_row = QHBoxLayout()
        key_row.addWidget(self.api_key, 1)
        key_row.addWidget(self.forget_key)
        form.addRow("API key", key_row)
        self.key_help = help_label("")
        form.addRow("", self.key_help)
        self.model = QComboBox(editable=True)
        self.model.setMinimumWidth(320)
        model_edit = self.model.lineEdit()
        if model_edit is not None:
            model_edit.setPlaceholderText("the first model the server lists")
        form.addRow("Model", self.model)
        self.tokenizer = QLineEdit(placeholderText="optional: the GGUF file the server runs")
        tok_row = QHBoxLayout()
        tok_row.addWidget(self.tokenizer, 1)
        tok_row.addWidget(push_button("Browse…", self._browse_tokenizer))
        form.addRow("Tokenizer GGUF", tok_row)
        form.addRow("", help_label(
            "For exact token counts on servers that cannot count (Ollama, LM Studio). "
            "llama.cpp, llama-cpp-python and vLLM count themselves."
        ))
        self.window_tokens = QSpinBox(minimum=0, maximum=10_000_000, suffix=" tokens")
        self.window_tokens.setGroupSeparatorShown(True)
        self.window_tokens.setSpecialValueText("from the server")
        form.addRow("Context window", self.window_tokens)
        self.tool_calls = combo_box(*TOOL_MODES)
        form.addRow("Tool calls", self.tool_calls)
        self.timeout = QSpinBox(minimum=1, maximum=3600, suffix=" s")
        form.addRow("Timeout", self.timeout)
        self.test_button = push_button("Test connection", self.test_connection,
                                       name="TestConnection")
        form.addRow("", self.test_button)
        self.result = new_label("", "ConnectionResult", wrap=True, selectable=True)
        self.result.setMinimumWidth(440)
        form.addRow("", self.result)
        outer.addWidget(self.server_box)
        outer.addStretch(1)
        #: The inputs read and filled as they are, by their :class:`ServerEngine` field.
        self.fields: dict[str, Field] = {
            "base_url": self.url, "tokenizer_gguf": self.tokenizer,
            "window": self.window_tokens, "tool_calls": self.tool_calls, "timeout_s": self.timeout,
        }

        self.kind_group.buttonToggled.connect(lambda *_a: self._kind_changed())
        for widget in (*self.fields.values(), self.api_key):
            on_change(widget, self.changed.emit)
        self.model.currentTextChanged.connect(self.changed)

    # -- values --------------------------------------------------------------------------
    def load(self, settings: Settings) -> None:
        engine = settings.engine
        self._settings = settings
        server = engine.server
        (self.server_button if engine.kind == "server" else self.embedded_button).setChecked(True)
        for name, widget in self.fields.items():
            set_field(widget, getattr(server, name))
        self.model.clear()
        if server.model:
            self.model.addItem(model_label(server.model), server.model)
        self.model.setEditText(server.model)
        self.api_key.clear()
        self._update_key_help()
        self._kind_changed()

    def collect(self) -> dict[str, Any]:
        """The page in the shape :class:`EngineSettings` validates."""
        return {
            "kind": "server" if self.server_button.isChecked() else "embedded",
            "server": {
                **{name: field_value(widget) for name, widget in self.fields.items()},
                "model": self.model_id(),
            },
        }

    def model_id(self) -> str:
        """The model's full id (the list shows short names)."""
        text = self.model.currentText().strip()
        index = self.model.findText(text)
        if index >= 0 and self.model.itemData(index):
            return str(self.model.itemData(index))
        return text

    def uses_server(self) -> bool:
        return self.server_button.isChecked()

    def known_window(self) -> int | None:
        """The server's window as far as the page knows it: the window typed, else the one
        the last connection test found for this address and model (None: not known)."""
        if not self.uses_server():
            return None
        if self.window_tokens.value():
            return self.window_tokens.value()
        report = self.report
        if report is None or not report.known_window or report.url != self._current_url():
            return None
        model = self.model_id()
        if model and model != report.model:
            return None
        return report.known_window

    def widget_for(self, loc: tuple[int | str, ...]) -> QWidget | None:
        """The input behind a validation error at ``engine.<loc>``."""
        name = str(loc[-1]) if loc else ""
        if name == "model":
            return self.model
        return self.fields.get(name, self.url if self.server_button.isChecked() else None)

    # -- the API key ---------------------------------------------------------------------
    @property
    def key_changed(self) -> bool:
        """A key was typed (it replaces the stored one when the dialog is saved)."""
        return bool(self.api_key.text())

    def store_key(self, engine: EngineSettings) -> None:
        """Store the typed key under the saved address (raises :class:`SecretStoreError`)."""
        if self.api_key.text() and engine.server.base_url:
            self._secrets.set(engine.server.base_url, self.api_key.text())

    def _stored_key(self, url: str) -> str | None:
        try:
            return self._secrets.get(url) if url else None
        except SecretStoreError:
            return None

    def _update_key_help(self) -> None:
        stored = self._stored_key(self._current_url()) is not None
        self.forget_key.setEnabled(stored)
        self.api_key.setPlaceholderText(
            "a key is stored: type to replace it" if stored else "optional"
        )
        self.key_help.setText(f"Kept in {self._secrets.where}, never in the settings file.")

    def _forget_key(self) -> None:
        try:
            self._secrets.delete(self._current_url())
        except SecretStoreError as exc:
            self.result.setText(str(exc))
        self.api_key.clear()
        self._update_key_help()

    def _current_url(self) -> str:
        try:
            return normalize_base_url(self.url.text())
        except ValueError:
            return ""

    # -- testing the connection ----------------------------------------------------------
    def test_connection(self) -> None:
        """Connect as the app would (background thread); :attr:`tested` says the outcome."""
        if self._test.running:
            return
        try:
            engine = EngineSettings.model_validate({**self.collect(), "kind": "server"})
        except ValidationError as exc:
            msg = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
            self._show_result(msg if "address" in msg else f"Server address: {msg}")
            return
        settings = self._settings.model_copy(update={"engine": engine})
        url = engine.server.base_url
        key = self.api_key.text() or self._stored_key(url)
        self.test_button.setEnabled(False)
        self.result.setText(f"Connecting to {url} ...")
        self._test.start(settings, key, self._relay.done.emit)

    def wait_for_test(self, timeout: float = 60.0) -> None:
        self._test.wait(timeout)

    def _show_result(self, outcome: object) -> None:
        self.test_button.setEnabled(True)
        if isinstance(outcome, ConnectionReport):
            self.report = outcome
            self.result.setProperty("failed", False)
            self.result.setStyleSheet("")
            self.result.setText("\n".join(outcome.lines()))
            self._offer_models(outcome)
        else:
            self.report = None
            self.result.setProperty("failed", True)
            self.result.setStyleSheet(f"color: {current_colors().error};")
            self.result.setText(str(outcome))
        self._update_key_help()
        self.tested.emit(outcome)

    def _offer_models(self, report: ConnectionReport) -> None:
        current = self.model_id() or report.model
        self.model.blockSignals(True)
        self.model.clear()
        for model_id in report.models:
            self.model.addItem(model_label(model_id), model_id)
        index = self.model.findData(current)
        self.model.setCurrentIndex(index if index >= 0 else self.model.findData(report.model))
        self.model.blockSignals(False)
        self.changed.emit()

    # -- misc ----------------------------------------------------------------------------
    def _kind_changed(self) -> None:
        self.server_box.setEnabled(self.server_button.isChecked())
        self.changed.emit()

    def _browse_tokenizer(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(
            self, "The GGUF file the server runs", str(Path.home()),
            "GGUF models (*.gguf);;All (*)",
        )
        if path:
            self.tokenizer.setText(path)
