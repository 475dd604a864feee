"""The chat list: new chat, search, rename, delete with undo.

It emits intents; the window does the work and calls :meth:`Sidebar.set_chats` with the
fresh list. Search matches titles and, through :attr:`Sidebar.searcher`, the messages (a
match in a message shows the words around it). :class:`SidebarWidth` keeps its width
following the zoom.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QPoint, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QSplitter,
    QToolButton,
    QWidget,
)

from assistant.ui.parts import hbox, new_label, opened, push_button, sentence, vbox
from assistant.ui.theme import zoom_percent

UNDO_SECONDS = 8
#: The chat list is never narrower than this.
MIN_WIDTH = 180
ID_ROLE = Qt.ItemDataRole.UserRole
TITLE_ROLE = Qt.ItemDataRole.UserRole + 1
#: Wait this long after the last key press before searching the messages.
SEARCH_DELAY_MS = 150

#: ``searcher(text, chat_ids)``: which of those chats have a message containing ``text``
#: (chat id -> the words around the first hit).
Searcher = Callable[[str, Sequence[str]], dict[str, str]]


@dataclass(frozen=True)
class ChatEntry:
    chat_id: str
    title: str
    updated: float = 0.0


def _age(updated: float, now: float | None = None) -> str:
    if not updated:
        return ""
    seconds = max(0.0, (now or time.time()) - updated)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return time.strftime("%H:%M", time.localtime(updated))
    return time.strftime("%d %b", time.localtime(updated))


class Sidebar(QFrame):
    new_chat_requested = Signal()
    chat_selected = Signal(str)
    rename_requested = Signal(str, str)
    delete_requested = Signal(str)
    undo_delete_requested = Signal(str)
    options_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Sidebar")
        layout = vbox(self, (10, 12, 10, 10), 8)
        top = QHBoxLayout()
        top.addWidget(new_label("Chats", "SidebarTitle"))
        top.addStretch(1)
        self.new_button = push_button(
            "+ New chat", self.new_chat_requested, tip="New chat (Ctrl+N)", accessible="New chat"
        )
        top.addWidget(self.new_button)
        layout.addLayout(top)
        self.search = QLineEdit(placeholderText="Search chats (Ctrl+K)", clearButtonEnabled=True)
        self.search.setAccessibleName("Search chats")
        for clear in self.search.findChildren(QToolButton):  # the field's clear button
            clear.setAccessibleName("Clear the search")
        self.search.textChanged.connect(self._search_later)
        self.search.returnPressed.connect(self._open_first_visible)
        layout.addWidget(self.search)
        self.no_match = new_label("", "MutedLabel", wrap=True)
        self.no_match.setVisible(False)
        layout.addWidget(self.no_match)
        self._search_timer = QTimer(self, singleShot=True, interval=SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(lambda: self._apply_filter(self.search.text()))
        self.searcher: Searcher | None = None
        self.list = QListWidget()
        self.list.setAccessibleName("Chats")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setWordWrap(False)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._context_menu)
        self.list.itemClicked.connect(self._clicked)
        self.list.itemActivated.connect(self._clicked)
        layout.addWidget(self.list, 1)

        self.undo_bar = QFrame()
        self.undo_bar.setObjectName("UndoBar")
        undo = hbox(self.undo_bar, (10, 6, 6, 6))
        self.undo_label = QLabel("Chat deleted")
        self.undo_button = push_button("Undo", self._undo, accessible="Undo the delete")
        undo.addWidget(self.undo_label, 1)
        undo.addWidget(self.undo_button)
        self.undo_bar.setVisible(False)
        layout.addWidget(self.undo_bar)
        self._undo_timer = QTimer(self, singleShot=True)
        self._undo_timer.timeout.connect(lambda: self.undo_bar.setVisible(False))
        self._deleted_id: str | None = None
        self._current: str | None = None
        self._entries: list[ChatEntry] = []
        #: The menu of the last right-clicked chat (None before the first).
        self.context_menu: QMenu | None = None

    def minimumSizeHint(self) -> QSize:
        """At least 180 px, or what its title row and buttons need at the zoom in force."""
        hint = super().minimumSizeHint()
        return QSize(max(MIN_WIDTH, hint.width()), hint.height())

    # -- data --------------------------------------------------------------------------
    def set_chats(self, entries: list[ChatEntry], current: str | None = None) -> None:
        self._entries = list(entries)
        if current is not None:
            self._current = current
        self.list.blockSignals(True)
        self.list.clear()
        now = time.time()
        for entry in entries:
            item = QListWidgetItem(entry.title)
            item.setData(ID_ROLE, entry.chat_id)
            item.setData(TITLE_ROLE, entry.title)
            age = _age(entry.updated, now)
            item.setToolTip(f"{entry.title}\n{age}" if age else entry.title)
            self.list.addItem(item)
            if entry.chat_id == self._current:
                item.setSelected(True)
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)
        self._apply_filter(self.search.text())

    def set_current(self, chat_id: str | None) -> None:
        """The chat on screen: the one highlighted (none for a chat not saved yet)."""
        self._current = chat_id
        self._highlight(self.item_for(chat_id))

    def _items(self) -> list[QListWidgetItem]:
        return [self.list.item(i) for i in range(self.list.count())]

    def titles(self) -> list[str]:
        """The titles listed (those the search leaves shown)."""
        return [str(item.data(TITLE_ROLE)) for item in self._items() if not item.isHidden()]

    def item_for(self, chat_id: str | None) -> QListWidgetItem | None:
        return next((item for item in self._items() if item.data(ID_ROLE) == chat_id), None)

    # -- search ------------------------------------------------------------------------
    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _search_later(self, text: str) -> None:
        if not text.strip():
            self._search_timer.stop()
            self._apply_filter(text)
        else:
            self._search_timer.start()

    def _apply_filter(self, text: str) -> None:
        """Show the chats whose title or messages hold ``text`` (all of them for none)."""
        needle = " ".join(text.split()).lower()
        items = self._items()
        in_messages: dict[str, str] = {}
        if needle and self.searcher is not None:
            in_messages = self.searcher(needle, [str(item.data(ID_ROLE)) for item in items])
        shown = 0
        for item in items:
            title = str(item.data(TITLE_ROLE))
            hit = in_messages.get(str(item.data(ID_ROLE)))
            by_title = needle in title.lower()
            visible = not needle or by_title or hit is not None
            item.setHidden(not visible)
            shown += visible
            item.setText(f"{title}\n   {hit}" if needle and not by_title and hit else title)
        self.no_match.setText(sentence(f"No chats match “{text.strip()}”") if needle else "")
        self.no_match.setVisible(bool(needle) and not shown)

    def _open_first_visible(self) -> None:
        if self._search_timer.isActive():
            self._search_timer.stop()
            self._apply_filter(self.search.text())
        first = next((item for item in self._items() if not item.isHidden()), None)
        if first is not None:
            self._clicked(first)

    # -- actions -----------------------------------------------------------------------
    def _clicked(self, item: QListWidgetItem) -> None:
        chat_id = str(item.data(ID_ROLE))
        if chat_id != self._current:
            self.chat_selected.emit(chat_id)

    def _context_menu(self, pos: QPoint) -> None:
        """The right-clicked chat is highlighted while its menu is open and each entry acts
        on it; when the menu closes the highlight goes back to the chat on screen (which
        F2 and the Chat menu act on)."""
        item = self.list.itemAt(pos)
        if item is None:
            return
        chat_id = str(item.data(ID_ROLE))
        self._highlight(item)
        menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.addAction("Rename…", lambda: self.ask_rename(chat_id))
        menu.addAction("Model and system prompt…", lambda: self.options_requested.emit(chat_id))
        menu.addAction("Delete", lambda: self.delete(chat_id))
        menu.aboutToHide.connect(lambda: self.set_current(self._current))
        self.context_menu = menu
        menu.popup(self.list.viewport().mapToGlobal(pos))

    def _highlight(self, item: QListWidgetItem | None) -> None:
        """Select ``item`` alone (none: nothing highlighted), without opening it."""
        self.list.blockSignals(True)
        if item is None:
            self.list.clearSelection()
            self.list.setCurrentRow(-1)
        else:
            self.list.setCurrentItem(item)
            item.setSelected(True)
        self.list.blockSignals(False)

    def highlighted(self) -> list[str]:
        """The ids of the chats shown highlighted."""
        return [str(item.data(ID_ROLE)) for item in self.list.selectedItems()]

    def ask_rename(self, chat_id: str) -> QInputDialog | None:
        """A rename dialog wide enough for the whole title (not modal to the app loop)."""
        item = self.item_for(chat_id)
        if item is None:
            return None
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Rename chat")
        title = str(item.data(TITLE_ROLE))
        short = title if len(title) <= 40 else title[:39] + "…"
        dialog.setLabelText(f"New title for “{short}”:")
        dialog.setTextValue(str(item.data(TITLE_ROLE)))
        width = max(440, self.fontMetrics().horizontalAdvance(dialog.textValue()) + 80)
        dialog.setMinimumWidth(min(width, 900))
        dialog.setOkButtonText("Rename")
        dialog.textValueSelected.connect(
            lambda title: self.rename_requested.emit(chat_id, title.strip())
            if title.strip() else None
        )
        dialog.resize(dialog.minimumWidth(), dialog.sizeHint().height())
        return opened(dialog)

    def delete(self, chat_id: str) -> None:
        """Ask the window to delete a chat and offer Undo."""
        item = self.item_for(chat_id)
        title = str(item.data(TITLE_ROLE)) if item is not None else "Chat"
        self._deleted_id = chat_id
        self.delete_requested.emit(chat_id)
        short = title if len(title) <= 28 else title[:27] + "…"
        self.undo_label.setText(f"Deleted “{short}”")
        self.undo_bar.setVisible(True)
        self._undo_timer.start(UNDO_SECONDS * 1000)

    def _undo(self) -> None:
        self.undo_bar.setVisible(False)
        self._undo_timer.stop()
        if self._deleted_id is not None:
            chat_id, self._deleted_id = self._deleted_id, None
            self.undo_delete_requested.emit(chat_id)


#: The sidebar's width at 100 %.
BASE_WIDTH = 260
#: The most of the window's width the sidebar takes.
MAX_SHARE = 0.35


class SidebarWidth(QObject):
    """Sizes the first pane of ``splitter`` (the sidebar) in ``window``: its width follows
    the zoom, :data:`BASE_WIDTH` at 100 % scaled with its text (twice as wide at 200 %), at
    most :data:`MAX_SHARE` of the window so the chat keeps the room in a small window (it
    grows back with the window). A width the user set (dragged, or restored from
    ``window.ini`` after a restart) is kept as it is until the zoom changes, which scales it
    alike."""

    def __init__(self, window: QWidget, splitter: QSplitter) -> None:
        super().__init__(window)
        self._window, self._splitter = window, splitter
        sidebar = splitter.widget(0)
        if sidebar is None:
            raise ValueError("the splitter must hold the sidebar first")
        self._sidebar = sidebar
        self._percent = zoom_percent()
        #: The width asked for (before :data:`MAX_SHARE`), and whether the user chose it.
        self._wanted, self._user = self._base(), False
        #: The width last set here (another one was set by the user, or restored).
        self._set = self._capped(self._wanted)
        splitter.setSizes([self._set, max(1, window.width() - self._set)])
        window.installEventFilter(self)
        self._sidebar.installEventFilter(self)

    def _base(self) -> int:
        return round(BASE_WIDTH * self._percent / 100)

    def _capped(self, width: int) -> int:
        room = self._window.width()
        return min(width, int(room * MAX_SHARE)) if room > 0 else width

    def _check(self) -> None:
        """A width set since by someone else is the user's (dragged, or restored), unless it
        is the zoom's own (restored as it was set here)."""
        sizes = self._splitter.sizes()
        if sizes and sizes[0] != self._set:
            self._set = sizes[0]
            self._user = sizes[0] != self._capped(self._base())
            self._wanted = sizes[0] if self._user else self._base()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if watched is self._window and kind == QEvent.Type.Resize:
            self.fit()
        elif watched is self._sidebar and kind == QEvent.Type.FontChange:
            percent = zoom_percent()  # the zoom changes the application's font
            if percent != self._percent:
                self._check()
                old, self._percent = self._percent, percent
                self._wanted = (round(self._wanted * percent / old) if self._user
                                else self._base())
                self._apply(self._capped(self._wanted))
        return False

    def fit(self) -> None:
        """The sidebar at the width the zoom asks for, within :data:`MAX_SHARE` of the
        window (the user's width is left as it is)."""
        self._check()
        if not self._user:
            self._apply(self._capped(self._wanted))

    def _apply(self, width: int) -> None:
        sizes = self._splitter.sizes()
        if len(sizes) == 2 and width != sizes[0]:
            self._splitter.setSizes([width, max(1, sum(sizes) - width)])
        self._set = self._splitter.sizes()[0]  # (the sidebar's minimum may hold it wider)
