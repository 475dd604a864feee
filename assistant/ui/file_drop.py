"""Files dropped anywhere on the window are read into the chat: an application event filter,
so a drop works wherever it lands and the input never receives a ``file://`` URL as text.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QLabel, QWidget

DROP_HINT = "Drop to copy into your workspace and read it into the chat"


def local_files(mime: QMimeData | None) -> list[Path]:
    """The local files a drag carries (folders and remote URLs are left out)."""
    if mime is None or not mime.hasUrls():
        return []
    out: list[Path] = []
    for url in mime.urls():
        if url.isLocalFile():
            path = Path(url.toLocalFile())
            if path.is_file():
                out.append(path)
    return out


class DropOverlay(QLabel):
    """A translucent banner over the transcript while files are dragged over the window."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(DROP_HINT, parent)
        self.setObjectName("DropOverlay")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.hide()

    def cover(self) -> None:
        parent = self.parentWidget()
        if parent is not None:
            self.setGeometry(parent.rect().adjusted(16, 16, -16, -16))
        self.raise_()
        self.show()


class FileDropHandler(QObject):
    """Accepts file drops for every widget of ``window`` (installed on the application)."""

    files_dropped = Signal(list)  # list[Path]

    def __init__(self, window: QWidget, overlay_parent: QWidget) -> None:
        super().__init__(window)
        self._window = window
        self.overlay = DropOverlay(overlay_parent)
        self._hide_timer = QTimer(self, singleShot=True, interval=120)
        self._hide_timer.timeout.connect(self.overlay.hide)

    def _ours(self, obj: QObject) -> bool:
        return isinstance(obj, QWidget) and obj.window() is self._window

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind not in (
            QEvent.Type.DragEnter,
            QEvent.Type.DragMove,
            QEvent.Type.DragLeave,
            QEvent.Type.Drop,
        ) or not self._ours(obj):
            return False
        if kind == QEvent.Type.DragLeave:
            self._hide_timer.start()
            return False
        assert isinstance(event, QDragEnterEvent | QDragMoveEvent | QDropEvent)
        files = local_files(event.mimeData())
        if not files:
            return False
        event.setDropAction(Qt.DropAction.CopyAction)
        event.accept()
        if kind == QEvent.Type.Drop:
            self._hide_timer.stop()
            self.overlay.hide()
            self.files_dropped.emit(files)
        else:
            self._hide_timer.stop()
            if not self.overlay.isVisible():
                self.overlay.cover()
        return True
