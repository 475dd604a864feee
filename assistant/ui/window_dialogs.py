"""The main window's dialogs and file actions (its base class). Every dialog is opened
without blocking the event loop (``open()``), so the service keeps running and tests can
drive it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QWidget,
)

from assistant.service import catalog
from assistant.service.catalog import Registry, list_models
from assistant.service.chat_options import ChatOptions
from assistant.service.chats import suggested_export_path
from assistant.service.events import ModelSwitchSuggested
from assistant.service.service import ChatService
from assistant.service.values import HelpRow, ModelInfo
from assistant.ui.chat_input import ChatInput
from assistant.ui.chat_view import ChatView
from assistant.ui.models_page import ModelsPage
from assistant.ui.parts import form_layout, new_label, opened, push_button, sentence, vbox


class ChatOptionsDialog(QDialog):
    """This chat's model and system prompt (each chat remembers its own, see
    :mod:`assistant.service.chat_options`), for the open chat or the next new one."""

    manage_models_requested = Signal()

    def __init__(
        self,
        options: ChatOptions,
        registry: Registry | None,
        *,
        chat_title: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Model and system prompt")
        self.setMinimumWidth(560)
        self._original = options
        layout = vbox(self, (16, 14, 16, 12), 10)
        where = f"“{chat_title}”" if chat_title else "the new chat"
        layout.addWidget(
            new_label(sentence(f"For {where}") + " The chat remembers them.", "MutedLabel",
                      wrap=True)
        )
        form = form_layout(None, (10, -1))
        self.model = QComboBox()
        self.model.setAccessibleName("Model for this chat")
        for model in list_models(registry):
            if model.installed:
                self.model.addItem(model.display_name, model.key)
        if self.model.findData(options.model) < 0:
            self.model.addItem(options.model, options.model)
        self.model.setCurrentIndex(self.model.findData(options.model))
        form.addRow("Model", self.model)
        form.addRow("", push_button("Manage models…", self.manage_models_requested,
                                    accessible="Open the Models window"))
        self.system_prompt = QPlainTextEdit(options.system_prompt, tabChangesFocus=True)
        self.system_prompt.setAccessibleName("System prompt for this chat")
        self.system_prompt.setMinimumHeight(120)
        form.addRow("System prompt", self.system_prompt)
        self.as_default = QCheckBox("Also use this system prompt for new chats")
        form.addRow("", self.as_default)
        layout.addLayout(form)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setObjectName("PrimaryButton")
        layout.addWidget(self.buttons)

    def result_options(self) -> ChatOptions:
        return ChatOptions(
            str(self.model.currentData() or self._original.model),
            self.system_prompt.toPlainText(),
        )


class WindowDialogs(QMainWindow):
    service: ChatService
    registry: Registry | None
    input: ChatInput
    models_page: ModelsPage | None
    chat_options_dialog: ChatOptionsDialog | None

    chat_view: ChatView

    def show_notice(self, level: str, text: str, *, rows: Sequence[HelpRow] = ()) -> None:
        self.chat_view.add_notice(level, text, rows=rows)

    # -- files and the workspace -------------------------------------------------------
    def drop_files(self, files: list[Path]) -> None:
        for path in files:
            self.service.drop_file(path)
        self.input.setFocus()

    #: Opens a folder in the file manager (tests replace it).
    open_url = staticmethod(QDesktopServices.openUrl)

    def open_workspace(self) -> None:
        folder = self.service.settings.workspace_path()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.show_notice("error", f"Cannot create the workspace folder {folder}: {exc}")
            return
        if not self.open_url(QUrl.fromLocalFile(str(folder))):
            self.show_notice("warning", f"No file manager could open {folder}.")

    def change_workspace(self) -> QFileDialog:
        dialog = QFileDialog(self, "Choose the workspace folder")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        current = self.service.settings.workspace_path()
        dialog.setDirectory(str(current if current.is_dir() else Path.home()))
        dialog.fileSelected.connect(self._workspace_chosen)
        self.workspace_dialog = opened(dialog)
        return dialog

    def _workspace_chosen(self, folder: str) -> None:
        if folder:
            settings = self.service.settings.model_copy(update={"workspace": folder})
            self.service.apply_settings(settings)

    # -- models and the chat's options ---------------------------------------------------
    def open_models(self) -> ModelsPage:
        """The Models window (one at a time, not modal)."""
        if self.models_page is not None and self.models_page.isVisible():
            self.models_page.raise_()
            return self.models_page
        page = ModelsPage(self.registry, lambda: self.service.settings.model, parent=self)
        page.use_requested.connect(self.service.use_model)
        self.models_page = page
        page.show()
        return page

    def open_chat_options(self) -> ChatOptionsDialog:
        c = self.service
        title = c.chat.handle.title if c.chat.handle is not None else ""
        dialog = ChatOptionsDialog(c.chat_options(), self.registry, chat_title=title, parent=self)
        dialog.manage_models_requested.connect(self.open_models)
        dialog.accepted.connect(
            lambda: c.set_chat_options(
                dialog.result_options(), as_default=dialog.as_default.isChecked()
            )
        )
        self.chat_options_dialog = opened(dialog)
        return dialog

    def _chat_options_for(self, chat_id: str) -> None:
        if chat_id == self.service.chat.chat_id or self.service.open_chat(chat_id):
            self.open_chat_options()

    def _model_switch_suggested(self, event: ModelSwitchSuggested) -> QMessageBox:
        """The chat opened was last used with another model: ask before switching."""
        chat_name = self._model_name(event.chat_model)
        loaded_name = self._model_name(event.loaded_model)
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Switch models?",
            f"This chat was last used with {chat_name}; {loaded_name} is loaded now. "
            f"Switch to {chat_name} for it?",
            parent=self,
        )
        switch = box.addButton(f"Switch to {chat_name}", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(f"Keep {loaded_name}", QMessageBox.ButtonRole.RejectRole)
        box.buttonClicked.connect(
            lambda b: self.service.use_model(event.chat_model) if b is switch else None
        )
        self.model_switch_box = opened(box)
        return box

    def _model_name(self, key: str) -> str:
        """A model's one name (the Models window's, the status bar's)."""
        return catalog.model_name(key, self.registry)

    def _loaded_name(self, info: ModelInfo) -> str:
        """The loaded model's name as the Models window gives it."""
        registered = self.registry is not None and self.registry.get(info.name) is not None
        a_file = info.path.lower().endswith(".gguf")
        return self._model_name(info.path if a_file and not registered else info.name)

    # -- where /export writes ----------------------------------------------------------
    def export_chat(self) -> QFileDialog | None:
        """File → Export…: where to write the shown chat, as Markdown or JSON."""
        handle = self.service.chat.handle
        if handle is None:
            self.show_notice("info", "Nothing to export yet: this chat is empty.")
            return None
        return self._choose_export_path(suggested_export_path(handle.title))

    def _choose_export_path(self, suggested: Path) -> QFileDialog:
        """Ask where ``/export`` writes (``suggested`` is offered); the service writes it."""
        dialog = QFileDialog(self, "Export chat")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setNameFilters(["Markdown (*.md)", "OpenAI JSON (*.json)"])
        dialog.setDefaultSuffix("md")
        folder = suggested.parent
        dialog.setDirectory(str(folder if folder.is_dir() else Path.home()))
        dialog.selectFile(suggested.name)
        dialog.filterSelected.connect(
            lambda chosen: dialog.setDefaultSuffix("json" if "json" in chosen else "md")
        )
        dialog.fileSelected.connect(
            lambda target: self.service.chat.export(
                export_target(Path(target), dialog.selectedNameFilter())
            )
        )
        self.export_dialog = opened(dialog)
        return dialog


def export_target(path: Path, name_filter: str) -> Path:
    """The file to write: the format the dialog's filter names, unless the name already
    says one (``.md``, ``.json``)."""
    if path.suffix.lower() in (".md", ".json"):
        return path
    return path.with_name(path.name + (".json" if "json" in name_filter.lower() else ".md"))
