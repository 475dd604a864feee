"""The card for one tool call: collapsed to one line, expands to its arguments and
result; a pruned result says so and can still show the original."""

from __future__ import annotations

import json
import re

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QPlainTextEdit, QWidget

from assistant.conversation import Message, ToolCall
from assistant.ui.parts import action_button, new_label, styled_button, vbox
from assistant.ui.theme import mono_font
from assistant.ui.wrap_button import WrapButton


def _pretty_arguments(call: ToolCall) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False, indent=2)


def _short_arguments(call: ToolCall, limit: int = 70) -> str:
    if call.raw_arguments is not None:
        text = call.raw_arguments
    else:
        text = ", ".join(
            f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items()
        )
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class MonoBox(QPlainTextEdit):
    """Read-only monospace text that grows with its content up to ``max_lines``."""

    def __init__(self, text: str, max_lines: int = 14) -> None:
        super().__init__(readOnly=True, lineWrapMode=QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setObjectName("CardMono")
        self.setFont(mono_font())
        self.setFrameShape(QFrame.Shape.NoFrame)
        self._max_lines = max_lines
        self.set_text(text)

    def set_text(self, text: str) -> None:
        self.setPlainText(text)
        total = max(1, text.count("\n") + 1)
        lines = min(self._max_lines, total)
        policy = Qt.ScrollBarPolicy
        self.setVerticalScrollBarPolicy(
            policy.ScrollBarAsNeeded if total > self._max_lines else policy.ScrollBarAlwaysOff
        )
        metrics = self.fontMetrics()
        margin = int(self.document().documentMargin() * 2)
        self.setFixedHeight(lines * metrics.lineSpacing() + margin + 16)


class ToolCard(QFrame):
    """A tool call: collapsed to one line; expands to arguments and result."""

    def __init__(self, call: ToolCall, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.call = call
        self.result: Message | None = None
        self.setObjectName("ToolCard")
        layout = vbox(self, (8, 4, 8, 6), 4)
        self.header = styled_button(WrapButton(), "", name="CardHeader")
        self.header.setCheckable(True)
        self.header.setCursor(Qt.CursorShape.PointingHandCursor)
        self.header.toggled.connect(self.set_expanded)
        layout.addWidget(self.header)

        self.details = QWidget()
        details = vbox(self.details, (14, 0, 0, 0), 4)
        details.addWidget(new_label("Arguments", "MutedLabel"))
        self.arguments_box = MonoBox(_pretty_arguments(call), max_lines=8)
        self.arguments_box.setAccessibleName(f"Arguments of {call.name}")
        details.addWidget(self.arguments_box)
        self.result_title = new_label("Result", "MutedLabel")
        details.addWidget(self.result_title)
        self.pruned_row = QWidget()
        pruned = vbox(self.pruned_row, (0, 0, 0, 0), 2)  # the button under: a narrow card
        self.pruned_note = new_label(
            "Cleared from the model's context to save room (pruned). The model now sees "
            "“[Old tool result content cleared]”.",
            "PrunedNote", wrap=True,
        )
        self.show_original_button = action_button("Show original", "Show the full output")
        self.show_original_button.setCheckable(True)
        self.show_original_button.toggled.connect(lambda _shown: self._refresh())
        pruned.addWidget(self.pruned_note)
        pruned.addWidget(self.show_original_button, 0, Qt.AlignmentFlag.AlignLeft)
        details.addWidget(self.pruned_row)
        self.result_box = MonoBox("(running…)")
        self.result_box.setAccessibleName(f"Result of {call.name}")
        details.addWidget(self.result_box)
        layout.addWidget(self.details)
        self.details.setVisible(False)
        self.pruned_row.setVisible(False)
        self._refresh()

    @property
    def expanded(self) -> bool:
        return self.details.isVisible() or not self.details.isHidden()

    def set_expanded(self, expanded: bool) -> None:
        if self.header.isChecked() != expanded:
            self.header.setChecked(expanded)
            return
        self.details.setVisible(expanded)
        self._refresh()

    def set_result(self, message: Message) -> None:
        self.result = message
        self._refresh()

    def mark_pruned(self) -> None:
        if self.result is not None:
            self.result.pruned = True
        self._refresh()

    @property
    def is_pruned(self) -> bool:
        return self.result is not None and self.result.pruned

    def _refresh(self) -> None:
        arrow = "▾" if self.header.isChecked() else "▸"
        status = (
            "running…" if self.result is None else "error" if self.result.is_error
            else "output cleared" if self.result.pruned
            else result_size(self.call.name, self.result.content)
        )
        who = " (you)" if self.result is not None and self.result.initiated_by == "user" else ""
        self.header.setText(
            f"{arrow}  {self.call.name}{who}   {_short_arguments(self.call)}   — {status}"
        )
        self.header.setToolTip(f"{self.call.name}({_short_arguments(self.call, 400)})")
        if self.result is None:
            self.result_box.set_text("(running…)")
            return
        pruned = self.result.pruned
        self.pruned_row.setVisible(pruned)
        show = not pruned or self.show_original_button.isChecked()
        self.result_box.setVisible(show)
        self.show_original_button.setText("Hide original" if show and pruned else "Show original")
        if show:
            self.result_box.set_text(self.result.content or "(no output)")
        self.result_title.setText("Result (error)" if self.result.is_error else "Result")


_READ_HEADER = re.compile(r"\((?P<size>[\d,]+ lines?|lines [\d,]+-[\d,]+ of [\d,]+)(?P<cut>, cut)?")


def result_size(tool: str, content: str) -> str:
    """The card's size note: for a file read, the file's lines as its first line says
    ("lines 1-32 of 79, cut"), so the card and an export agree; else the output's lines."""
    if tool == "read_file":
        match = _READ_HEADER.search(content.split("\n", 1)[0])
        if match is not None:
            return match.group("size") + (", cut to fit" if match.group("cut") else "")
    lines = content.count("\n") + 1 if content else 0
    return f"{lines} line{'s' if lines != 1 else ''} of output"
