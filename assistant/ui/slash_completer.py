"""The completion popup for slash commands (``/help``, ``/compact`` …) and ``!command``.

While the input holds a single word starting with ``/`` or ``!`` a popup lists the commands
that match, with a one-line description each. Up/Down choose, Enter or Tab insert the
command (followed by a space), Esc closes the popup.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QCompleter, QListView, QPlainTextEdit

from assistant.agent.commands import COMMANDS

COMMAND_ROLE = Qt.ItemDataRole.UserRole + 1


class CommandModel(QAbstractListModel):
    """The commands: shown as "command args — description", matched on the command."""

    def rowCount(
        self,
        parent: QModelIndex | QPersistentModelIndex = QModelIndex(),  # noqa: B008
    ) -> int:
        return 0 if parent.isValid() else len(COMMANDS)

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(COMMANDS):
            return None
        spec = COMMANDS[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{spec.usage}   —   {spec.description}"
        if role in (COMMAND_ROLE, Qt.ItemDataRole.EditRole):
            return spec.command
        if role == Qt.ItemDataRole.ToolTipRole:
            return spec.description
        return None


class SlashCompleter(QObject):
    """Attaches a command popup to a :class:`QPlainTextEdit`."""

    #: The command inserted (e.g. "/compact").
    inserted = Signal(str)

    def __init__(self, editor: QPlainTextEdit) -> None:
        super().__init__(editor)
        self.editor = editor
        self.model = CommandModel(self)
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
        self.inserted.emit(command)
