"""The completion popup for slash commands (``/help``, ``/compact`` …) and ``!command``.

While the input holds a single word starting with ``/`` or ``!`` a popup lists the commands
that match, with a one-line description each. Up/Down choose, Enter or Tab insert the
command (followed by a space), Esc closes the popup.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QKeyEvent, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QCompleter, QListView, QPlainTextEdit

from assistant.service.values import COMMANDS

COMMAND_ROLE = Qt.ItemDataRole.UserRole + 1


def command_model(parent: QObject) -> QStandardItemModel:
    """The commands: shown as "command args — description", matched on the command."""
    model = QStandardItemModel(parent)
    for spec in COMMANDS:
        item = QStandardItem(f"{spec.usage}   —   {spec.description}")
        item.setData(spec.command, COMMAND_ROLE)
        item.setToolTip(spec.description)
        item.setEditable(False)
        model.appendRow(item)
    return model


class SlashCompleter(QObject):
    """Attaches a command popup to a :class:`QPlainTextEdit`."""

    def __init__(self, editor: QPlainTextEdit) -> None:
        super().__init__(editor)
        self.editor = editor
        self.model = command_model(self)
        self.completer = QCompleter(self.model, self)
        self.completer.setCompletionRole(COMMAND_ROLE)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        self.completer.setFilterMode(Qt.MatchFlag.MatchStartsWith)
        self.completer.setWidget(editor)
        self.popup = QListView()
        self.popup.setObjectName("SlashPopup")
        self.popup.setUniformItemSizes(True)
        self.completer.setPopup(self.popup)
        self.completer.activated.connect(self.insert)
        editor.textChanged.connect(self.update_popup)

    @property
    def popup_visible(self) -> bool:
        return self.popup.isVisible()

    def matches(self) -> list[str]:
        model = self.completer.completionModel()
        return [str(model.index(i, 0).data(COMMAND_ROLE)) for i in range(model.rowCount())]

    def update_popup(self) -> None:
        text = self.editor.toPlainText()
        if not text or text[0] not in "/!" or any(ch.isspace() for ch in text):
            self.hide()
            return
        prefix = text if text[0] == "/" else "!"
        self.completer.setCompletionPrefix(prefix)
        if self.completer.completionCount() == 0 or (
            self.completer.completionCount() == 1 and self.matches() == [text]
        ):
            self.hide()
            return
        popup = self.popup
        rect = self.editor.cursorRect()
        rect.setWidth(min(520, max(360, self.editor.width())))
        self.completer.complete(rect)
        popup.setCurrentIndex(self.completer.completionModel().index(0, 0))

    def hide(self) -> None:
        if self.popup.isVisible():
            self.popup.hide()

    def handle_key(self, event: QKeyEvent) -> bool:
        """Handle a key the editor got while the popup is open; True when consumed."""
        if not self.popup_visible:
            return False
        key = event.key()
        popup = self.popup
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Tab):
            index = popup.currentIndex()
            if not index.isValid():
                index = self.completer.completionModel().index(0, 0)
            self.insert(str(index.data(COMMAND_ROLE)))
            return True
        if key == Qt.Key.Key_Escape:
            self.hide()
            return True
        if key in (Qt.Key.Key_Up, Qt.Key.Key_Down):
            rows = self.completer.completionModel().rowCount()
            row = popup.currentIndex().row() if popup.currentIndex().isValid() else -1
            row = (row + (1 if key == Qt.Key.Key_Down else -1)) % max(1, rows)
            popup.setCurrentIndex(self.completer.completionModel().index(row, 0))
            return True
        return False

    def insert(self, command: str) -> None:
        self.hide()
        text = command if command == "!" else command + " "
        self.editor.setPlainText(text)
        cursor = self.editor.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.editor.setTextCursor(cursor)
        self.hide()
