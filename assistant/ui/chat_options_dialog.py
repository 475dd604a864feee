"""This chat's model and system prompt (each chat remembers its own, see
:mod:`assistant.service.chat_options`), for the open chat or the next new one.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QPlainTextEdit,
    QWidget,
)

from assistant.llm.catalog import list_models
from assistant.llm.registry import Registry
from assistant.service.chat_options import ChatOptions
from assistant.ui.parts import form_layout, new_label, push_button, vbox


class ChatOptionsDialog(QDialog):
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
            new_label(f"For {where}. The chat remembers them.", "MutedLabel", wrap=True)
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
        self.system_prompt = QPlainTextEdit(options.system_prompt)
        self.system_prompt.setAccessibleName("System prompt for this chat")
        self.system_prompt.setMinimumHeight(120)
        self.system_prompt.setTabChangesFocus(True)
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
