"""Markdown rendering for chat messages: prose as a QLabel with Qt's Markdown support,
fenced code as monospace blocks with a Copy button. Re-rendering a growing reply reuses the
widgets and changes only what differs, so streaming does not flicker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QSizePolicy, QWidget

from assistant.ui.parts import action_button, new_label, vbox
from assistant.ui.theme import mono_font

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<lang>[^\n`]*)$")


@dataclass(frozen=True)
class Segment:
    """A run of prose (``lang is None``) or one fenced code block."""

    text: str
    lang: str | None = None

    @property
    def is_code(self) -> bool:
        return self.lang is not None


def split_segments(markdown: str) -> list[Segment]:
    """Split Markdown into prose and fenced code blocks.

    An unclosed fence (a reply still streaming) makes the rest of the text code.
    """
    segments: list[Segment] = []
    prose: list[str] = []
    code: list[str] = []
    fence: str | None = None
    lang = ""
    for line in markdown.split("\n"):
        if fence is None:
            match = _FENCE.match(line)
            if match:
                if prose:
                    segments.append(Segment("\n".join(prose)))
                    prose = []
                fence = match.group("fence")
                lang = match.group("lang").strip()
                code = []
            else:
                prose.append(line)
        elif line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            segments.append(Segment("\n".join(code), lang))
            fence = None
        else:
            code.append(line)
    if fence is not None:
        segments.append(Segment("\n".join(code), lang))
    elif prose:
        segments.append(Segment("\n".join(prose)))
    return [s for s in segments if s.is_code or s.text.strip()]


_HEADING = re.compile(r"^(#{1,4})(?=\s)", re.MULTILINE)


def demote_headings(markdown: str) -> str:
    """Chat replies use ``#``/``##`` freely; shown at full size they shout. Two levels
    smaller reads like a document inside a message."""
    return _HEADING.sub(lambda m: m.group(1) + "##", markdown)


class ProseLabel(QLabel):
    """Selectable Markdown prose that wraps to the available width; with ``plain`` the
    text is shown as typed (every line break kept, nothing read as Markdown)."""

    def __init__(self, text: str = "", parent: QWidget | None = None, plain: bool = False) -> None:
        super().__init__(parent)
        self.plain = plain
        self.setTextFormat(Qt.TextFormat.PlainText if plain else Qt.TextFormat.MarkdownText)
        self.setWordWrap(True)
        self.setOpenExternalLinks(True)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.set_markdown(text)

    def set_markdown(self, text: str) -> None:
        self.setText(text if self.plain else demote_headings(text))


class CodeBlock(QFrame):
    """A fenced code block: language, a Copy button and monospace, unwrapped text."""

    def __init__(self, code: str, lang: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("CodeBlock")
        layout = vbox(self, (8, 4, 4, 6), 2)
        header = QHBoxLayout()
        self.lang_label = new_label(lang or "code", "CodeLang")
        self.copy_button = action_button("Copy", "Copy this code", self.copy)
        header.addWidget(self.lang_label)
        header.addStretch(1)
        header.addWidget(self.copy_button)
        layout.addLayout(header)
        self.editor = QPlainTextEdit(readOnly=True, lineWrapMode=QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.setAccessibleName(f"Code ({lang})" if lang else "Code")
        self.editor.setFrameShape(QFrame.Shape.NoFrame)
        self.editor.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.editor.setFont(mono_font())
        self.editor.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.editor.setStyleSheet("background: transparent; border: none; padding: 0;")
        layout.addWidget(self.editor)
        self.editor.installEventFilter(self)  # a new size or font: the height again
        self.code = ""
        self.set_code(code, lang)
        self._fit_height()  # also for a block that has no line yet (a reply streaming)

    def set_code(self, code: str, lang: str = "") -> None:
        if lang:
            self.lang_label.setText(lang)
        if code == self.code:
            return
        if code.startswith(self.code) and self.code:
            cursor = self.editor.textCursor()
            cursor.movePosition(cursor.MoveOperation.End)
            cursor.insertText(code[len(self.code) :])
        else:
            self.editor.setPlainText(code)
        self.code = code
        self._fit_height()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The editor's font (zoom) or width changed: fit its height to every line, with
        room for the scroll bar when a line is wider than the block."""
        if watched is self.editor and event.type() in (
            QEvent.Type.FontChange, QEvent.Type.Resize
        ):
            self._fit_height()
        return False

    def _fit_height(self) -> None:
        lines = max(1, self.code.count("\n") + 1)
        metrics = self.editor.fontMetrics()
        margin = int(self.editor.document().documentMargin() * 2)
        height = lines * metrics.lineSpacing() + margin + 4
        longest = max((metrics.horizontalAdvance(x) for x in self.code.split("\n")), default=0)
        if longest + margin > self.editor.viewport().width():
            height += self.editor.horizontalScrollBar().sizeHint().height()
        if height != self.editor.height() or height != self.editor.minimumHeight():
            self.editor.setFixedHeight(height)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.code)
        self.copy_button.setText("Copied")
        QTimer.singleShot(1500, self._reset_copy_label)

    def _reset_copy_label(self) -> None:
        self.copy_button.setText("Copy")


class MarkdownView(QWidget):
    """Renders a Markdown string; call :meth:`set_markdown` again as it grows.

    ``plain_prose`` shows the text between code blocks as typed (a user's message: pasted
    lines stay lines)."""

    def __init__(
        self, markdown: str = "", parent: QWidget | None = None, *, plain_prose: bool = False
    ) -> None:
        super().__init__(parent)
        self.plain_prose = plain_prose
        self._layout = vbox(self, (0, 0, 0, 0), 6)
        self._widgets: list[QWidget] = []
        self._segments: list[Segment] = []
        self.markdown = ""
        self.set_markdown(markdown)

    def code_blocks(self) -> list[CodeBlock]:
        return [w for w in self._widgets if isinstance(w, CodeBlock)]

    def prose_labels(self) -> list[ProseLabel]:
        return [w for w in self._widgets if isinstance(w, ProseLabel)]

    def set_markdown(self, markdown: str) -> None:
        if markdown == self.markdown and self._widgets:
            return
        self.markdown = markdown
        segments = split_segments(markdown)
        # The widgets of the leading segments that kept their kind are updated in place.
        kept = 0
        for old, seg in zip(self._segments, segments, strict=False):
            if old.is_code != seg.is_code:
                break
            if seg != old:
                self._update(self._widgets[kept], seg)
            kept += 1
        for stale in self._widgets[kept:]:
            self._layout.removeWidget(stale)
            stale.deleteLater()
        del self._widgets[kept:]
        for seg in segments[kept:]:
            widget = self._make(seg)
            self._layout.addWidget(widget)
            self._widgets.append(widget)
        self._segments = segments

    def _make(self, seg: Segment) -> QWidget:
        if seg.lang is not None:
            return CodeBlock(seg.text, seg.lang)
        return ProseLabel(seg.text, plain=self.plain_prose)

    @staticmethod
    def _update(widget: QWidget, seg: Segment) -> None:
        if isinstance(widget, CodeBlock):
            widget.set_code(seg.text, seg.lang or "")
        elif isinstance(widget, ProseLabel):
            widget.set_markdown(seg.text)
