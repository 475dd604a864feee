"""The first thing a new chat shows (in place of the empty transcript): what the app does
and where what is typed goes, the workspace folder, how to give it a file, what the context
bar means, and example prompts sent with one click.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QStyle,
    QStyleOptionButton,
    QStylePainter,
    QVBoxLayout,
    QWidget,
)

from assistant.ui.parts import ElidedLabel, hbox, new_label, push_button, vbox, vertical_scroller

#: Prompts a small local model answers well (no files or tools needed).
EXAMPLE_PROMPTS = (
    "Explain what a context window is, in two sentences.",
    "Write a short, polite email declining a meeting on Friday.",
    "Give me three ideas for a healthy lunch I can make in 10 minutes.",
)


OFFLINE_INTRO = (
    "A chat assistant that runs a small language model on this computer. It works without "
    "a network, and nothing you type or share leaves the machine."
)


def server_intro(url: str) -> str:
    """The introduction with the server engine: what leaves the machine, and to where."""
    return (
        f"A chat assistant whose model runs on the server at {url} (Settings, Engine). "
        "What you type or share in a chat is sent to that server, and nowhere else."
    )


def _text(text: str, name: str = "") -> QLabel:
    label = new_label(text, name, wrap=True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def _section(title: str) -> QLabel:
    label = new_label(title, "WelcomeSection")
    label.setAccessibleName(title)
    return label


class WrappingButton(QPushButton):
    """A push button whose text wraps onto more lines when the page is narrow (a plain
    QPushButton asks for its whole text on one line, which pushed the page wider than a
    700-pixel window's chat area and cut every paragraph at the right edge)."""

    #: The style sheet's padding of ``QPushButton#ExamplePrompt`` (theme.py).
    PAD_X, PAD_Y = 12, 8
    #: The narrowest it gets, in average characters.
    MIN_CHARS = 16

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def _text_rect(self, width: int) -> QRect:
        inner = QRect(0, 0, max(width - 2 * self.PAD_X, 1), 100_000)
        flags = Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap
        return self.fontMetrics().boundingRect(inner, int(flags), self.text())

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._text_rect(width).height() + 2 * self.PAD_Y + 2

    def sizeHint(self) -> QSize:
        width = self.fontMetrics().horizontalAdvance(self.text()) + 2 * self.PAD_X + 2
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:
        width = min(self.sizeHint().width(),
                    self.fontMetrics().averageCharWidth() * self.MIN_CHARS + 2 * self.PAD_X)
        return QSize(width, self.heightForWidth(width))

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QStylePainter(self)
        option = QStyleOptionButton()
        self.initStyleOption(option)
        option.text = ""
        painter.drawControl(QStyle.ControlElement.CE_PushButton, option)
        area = self.rect().adjusted(self.PAD_X, self.PAD_Y, -self.PAD_X, -self.PAD_Y)
        painter.setPen(self.palette().buttonText().color())
        flags = (
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextWordWrap
        )
        painter.drawText(area, int(flags), self.text())


class WelcomeView(QScrollArea):
    """The empty-chat page. Emits what the user picked; the window acts on it."""

    example_chosen = Signal(str)
    open_workspace_requested = Signal()
    change_workspace_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("WelcomeView")
        vertical_scroller(self)
        inner = QWidget()
        inner.setObjectName("WelcomeInner")
        outer = hbox(inner, (24, 24, 24, 24))
        column = QWidget()
        column.setMaximumWidth(680)
        column.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        outer.addStretch(1)
        outer.addWidget(column, 100)
        outer.addStretch(1)
        layout = vbox(column, (0, 0, 0, 0), 10)

        layout.addWidget(new_label("Offline Assistant", "WelcomeTitle"))
        self.intro = _text(OFFLINE_INTRO, "WelcomeIntro")
        layout.addWidget(self.intro)
        layout.addWidget(
            _text(
                "Small models remember little at a time (their context window). The bar "
                "under the input shows how full it is; when it fills, the assistant clears "
                "old file contents and summarizes older messages by itself, and says so in "
                "the chat.",
                "MutedLabel",
            )
        )

        layout.addSpacing(6)
        layout.addWidget(_section("Your workspace folder"))
        layout.addWidget(
            _text(
                "The assistant reads files here, and changes them only when you approve.",
                "MutedLabel",
            )
        )
        row = QHBoxLayout()
        row.setSpacing(8)
        self.workspace_label = ElidedLabel()
        self.workspace_label.setObjectName("WorkspacePath")
        self.open_button = push_button(
            "Open", self.open_workspace_requested,
            tip="Show the workspace folder in the file manager",
            accessible="Open the workspace folder",
        )
        self.change_button = push_button(
            "Change…", self.change_workspace_requested, tip="Choose another workspace folder",
            accessible="Change the workspace folder",
        )
        row.addWidget(self.workspace_label, 1)
        row.addWidget(self.open_button)
        row.addWidget(self.change_button)
        layout.addLayout(row)

        layout.addSpacing(6)
        layout.addWidget(_section("Give it a file"))
        files = new_label(
            "Drop a file onto this window: it is copied into the workspace (its "
            "<i>dropped</i> folder) and read into the chat. Or type <b>/&#8288;read</b> "
            "and a file name from the workspace (<b>/&#8288;ls</b> lists the folder). "
            "Then ask about it.", wrap=True,
        )
        files.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(files)

        layout.addSpacing(6)
        layout.addWidget(_section("Your models"))
        #: One line per model: what it does well, whether it uses the file tools
        #: (:meth:`set_models`); Ctrl+M switches.
        self.models_box = QVBoxLayout()
        self.models_box.setSpacing(4)
        layout.addLayout(self.models_box)
        self.model_lines: list[QLabel] = []

        layout.addSpacing(6)
        layout.addWidget(_section("Try asking"))
        self.example_buttons: list[QPushButton] = []
        for prompt in EXAMPLE_PROMPTS:
            button = WrappingButton(prompt)
            button.setObjectName("ExamplePrompt")
            button.setToolTip("Send this message")
            button.setAccessibleName(f"Send the example: {prompt}")
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.clicked.connect(lambda _checked=False, p=prompt: self.example_chosen.emit(p))
            layout.addWidget(button)
            self.example_buttons.append(button)

        layout.addSpacing(6)
        self.keys_hint = new_label(
                "Type <b>/</b> for commands (<b>/help</b> lists them).<br>"
                "Keys: <b>Ctrl+N</b> new chat · <b>Ctrl+K</b> search chats · "
                "<b>Ctrl+M</b> models · <b>Ctrl+Comma</b> (Ctrl+,) settings · "
                "<b>F1</b> short guide",
                "MutedLabel", wrap=True,
        )
        self.keys_hint.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.keys_hint)
        layout.addStretch(1)
        self.setWidget(inner)

    def set_server(self, url: str | None) -> None:
        """Say where the model runs: this computer (None), or the server at ``url``."""
        self.intro.setText(server_intro(url) if url else OFFLINE_INTRO)

    def set_models(self, lines: list[str]) -> None:
        """Show ``lines`` (one per model, the one in use first) and how to switch."""
        for label in self.model_lines:
            self.models_box.removeWidget(label)
            label.deleteLater()
        texts = [*lines, "Models (Ctrl+M) installs, adds and switches models."]
        self.model_lines = [_text(text, "" if i < len(lines) else "MutedLabel")
                            for i, text in enumerate(texts)]
        for label in self.model_lines:
            self.models_box.addWidget(label)

    def set_workspace(self, path: Path) -> None:
        self.workspace_label.set_full_text(str(path))
        self.workspace_label.setAccessibleName(f"Workspace folder: {path}")
