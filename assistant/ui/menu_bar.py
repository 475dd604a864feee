"""The window's menu bar, with the usual shortcuts. Each action calls what the window or
the session service already does; a shortcut never acts while its entry is greyed out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QMenu

from assistant.conversation import Message
from assistant.service.values import to_markdown
from assistant.ui.help_dialogs import (
    GUIDE,
    HelpDialog,
    about_markdown,
    shortcuts_markdown,
)

if TYPE_CHECKING:
    from assistant.ui.main_window import MainWindow

#: Zoom steps in percent (View → Zoom in / out walk through them).
ZOOM_STEPS = (50, 67, 80, 90, 100, 110, 125, 150, 175, 200, 250)


def next_zoom(current: int, step: int) -> int:
    """The zoom one step in (``step`` 1) or out (-1) from ``current``."""
    if step > 0:
        return next((z for z in ZOOM_STEPS if z > current), ZOOM_STEPS[-1])
    return next((z for z in reversed(ZOOM_STEPS) if z < current), ZOOM_STEPS[0])


class AppMenus:
    """Builds the menus on ``window`` and keeps their actions' enabled state current."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        bar = window.menuBar()
        w = window

        file_menu = bar.addMenu("&File")
        self.new_chat = self._action(file_menu, "New chat", "Ctrl+N", w.new_chat)
        self.export = self._action(file_menu, "&Export…", "Ctrl+Shift+E", w.export_chat)
        file_menu.addSeparator()
        self.quit = self._action(file_menu, "&Quit", QKeySequence.StandardKey.Quit, w.close)
        self.quit.setShortcut(QKeySequence("Ctrl+Q"))
        self.quit.setMenuRole(QAction.MenuRole.QuitRole)

        edit = bar.addMenu("&Edit")
        self.copy_chat = self._action(edit, "&Copy chat", "Ctrl+Shift+C", self.copy_whole_chat)
        self.delete_message = self._action(
            edit, "&Delete last message", None, self._delete_last_message
        )
        edit.addSeparator()
        self.search = self._action(edit, "Search chats", "Ctrl+K", w.sidebar.focus_search)

        chat = bar.addMenu("&Chat")
        self.rename = self._action(chat, "&Rename…", "F2", self._rename)
        self.delete_chat = self._action(chat, "&Delete chat", None, self._delete_chat)
        chat.addSeparator()
        self.continue_generation = self._action(
            chat, "&Continue generation", "Ctrl+Shift+Return", w.service.continue_reply
        )
        self.regenerate = self._action(chat, "Re&generate", "Ctrl+Shift+R", self._regenerate)
        self.stop = self._action(chat, "&Stop", None, w.service.stop)
        self.stop.setText("&Stop\tEsc")  # Esc itself stays the window's own shortcut
        chat.addSeparator()
        self.chat_options = self._action(
            chat, "Model and system &prompt…", None, w.open_chat_options
        )

        view = bar.addMenu("&View")
        self.zoom_in = self._action(view, "Zoom &in", "Ctrl+=", lambda: self.zoom(1))
        self.zoom_in.setShortcuts([QKeySequence("Ctrl+="), QKeySequence("Ctrl++")])
        self.zoom_out = self._action(view, "Zoom &out", "Ctrl+-", lambda: self.zoom(-1))
        self.zoom_reset = self._action(view, "&Reset zoom", "Ctrl+0", lambda: self.zoom(0))

        tools = bar.addMenu("&Tools")
        self.models = self._action(tools, "&Models…", "Ctrl+M", w.open_models)
        self.settings = self._action(tools, "&Settings…", "Ctrl+,", w.open_settings)

        help_menu = bar.addMenu("&Help")
        self.guide = self._action(help_menu, "Short &guide", "F1", self.show_guide)
        self.shortcuts = self._action(help_menu, "&Keyboard shortcuts", None,
                                      self.show_shortcuts)
        help_menu.addSeparator()
        self.about = self._action(help_menu, "&About Offline Assistant", None, self.show_about)
        self.about.setMenuRole(QAction.MenuRole.AboutRole)
        self.help_dialog: HelpDialog | None = None

        for menu in (file_menu, edit, chat, view):
            menu.aboutToShow.connect(self.update)
        self.update()

    def _action(
        self,
        menu: QMenu,
        text: str,
        keys: str | QKeySequence.StandardKey | None,
        slot: Callable[[], object],
    ) -> QAction:
        action = QAction(text, self.window)
        if keys is not None:
            action.setShortcut(QKeySequence(keys))
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        self.window.addAction(action)  # shortcuts work while the menu bar is hidden too
        return action

    # -- state -------------------------------------------------------------------------
    def update(self) -> None:
        """Grey out what cannot be done now."""
        c = self.window.service
        has_chat = c.chat.handle is not None
        messages = [m for m in c.chat.shown_conversation.messages if m.role != "system"]
        last = messages[-1] if messages else None
        idle = not c.jobs.busy
        for action in (self.export, self.copy_chat, self.rename, self.delete_chat):
            action.setEnabled(has_chat)
        self.delete_message.setEnabled(has_chat and idle and _deletable(last))
        can_answer = has_chat and idle and c.ready
        self.continue_generation.setEnabled(
            can_answer and last is not None and last.role == "assistant"
            and not last.tool_calls
        )
        self.regenerate.setEnabled(can_answer and self._last_reply() is not None)
        self.stop.setEnabled(not idle)
        zoom = c.settings.zoom
        self.zoom_in.setEnabled(zoom < ZOOM_STEPS[-1])
        self.zoom_out.setEnabled(zoom > ZOOM_STEPS[0])
        self.zoom_reset.setEnabled(zoom != 100)

    def _last_reply(self) -> Message | None:
        for msg in reversed(self.window.service.chat.shown_conversation.messages):
            if msg.role == "assistant" and msg.initiated_by == "model":
                return msg
            if msg.role == "user":
                return None
        return None

    # -- actions -----------------------------------------------------------------------
    def copy_whole_chat(self) -> str:
        """The shown branch as Markdown on the clipboard (what File → Export… writes)."""
        c = self.window.service
        if c.chat.handle is None:
            return ""
        text = to_markdown(c.chat.shown_conversation, c.chat.handle.title)
        QGuiApplication.clipboard().setText(text)
        self.window.status_label.setText("Chat copied as Markdown")
        return text

    def _delete_last_message(self) -> None:
        messages = [
            m for m in self.window.service.chat.shown_conversation.messages if _deletable(m)
        ]
        if messages:
            self.window.service.delete_message(messages[-1].id)

    def _rename(self) -> None:
        chat_id = self.window.service.chat.chat_id
        if chat_id is not None:
            self.window.sidebar.ask_rename(chat_id)

    def _delete_chat(self) -> None:
        chat_id = self.window.service.chat.chat_id
        if chat_id is not None:
            self.window.sidebar.delete(chat_id)

    def _regenerate(self) -> None:
        reply = self._last_reply()
        if reply is not None:
            self.window.service.regenerate(reply.id)

    # -- help --------------------------------------------------------------------------
    def show_guide(self) -> HelpDialog:
        """Help → Short guide: how the window works, in a few paragraphs."""
        return self._help("Short guide", GUIDE)

    def show_shortcuts(self) -> HelpDialog:
        """Help → Keyboard shortcuts: every menu entry's key, then the other keys."""
        return self._help("Keyboard shortcuts", shortcuts_markdown(self.window.actions()))

    def show_about(self) -> HelpDialog:
        info = self.window.service.model.info
        name = self.window._loaded_name(info) if info is not None else ""
        return self._help("About Offline Assistant", about_markdown(name))

    def _help(self, title: str, markdown: str) -> HelpDialog:
        if self.help_dialog is None:
            self.help_dialog = HelpDialog(self.window)
        self.help_dialog.show_text(title, markdown)
        return self.help_dialog

    def zoom(self, step: int) -> int:
        """One step in (1), out (-1), or back to 100 % (0); saved in the settings."""
        c = self.window.service
        zoom = 100 if step == 0 else next_zoom(c.settings.zoom, step)
        if zoom != c.settings.zoom:
            c.apply_settings(c.settings.model_copy(update={"zoom": zoom}))
        self.update()
        return zoom


def _deletable(msg: Message | None) -> bool:
    """A message the user can delete (a tool result goes with the reply that asked)."""
    return msg is not None and msg.role in ("user", "assistant")
