"""The sidebar's width follows the zoom: :data:`BASE_WIDTH` at 100 %, scaled with its text
(twice as wide at 200 %), at most :data:`MAX_SHARE` of the window so the chat keeps the room
in a small window (it grows back with the window). A width the user set (dragged, or
restored from ``window.ini`` after a restart) is kept as it is until the zoom changes, which
scales it alike."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QSplitter, QWidget

from assistant.ui.theme import zoom_percent

#: The sidebar's width at 100 %.
BASE_WIDTH = 260
#: The most of the window's width the sidebar takes.
MAX_SHARE = 0.35


class SidebarWidth(QObject):
    """Sizes the first pane of ``splitter`` (the sidebar) in ``window``."""

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
