"""The context bar: how full the model's window is, from the model's own tokenizer.

One bar as wide as the window, split into the prompt's segments as the controller counted
them, the reserve for the reply and free room; a mark shows the smaller target the history
is kept within, when there is one. The tooltip gives the exact numbers.
"""

from __future__ import annotations

from typing import Literal

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from assistant.service.values import ContextUsage
from assistant.ui.parts import hbox, new_label
from assistant.ui.theme import current_colors

Level = Literal["ok", "warning", "critical"]

#: (key in ``ContextUsage.segments``, label, its :class:`Colors` field), in the order drawn.
#: "tools" is what the tool schemas cost (the controller's key), "tool_outputs" the tool
#: results in the chat.
SEGMENTS = (
    ("system", "System prompt", "seg_system"),
    ("summary", "Summary", "seg_summary"),
    ("conversation", "Conversation", "seg_conversation"),
    ("tool_outputs", "Tool outputs", "seg_tools"),
    ("tools", "Tool schemas", "seg_schemas"),
)

#: Shown when the engine cannot count exactly (a server without a tokenizer endpoint).
ESTIMATE_NOTE = (
    "Counts are estimates (cl100k): the server does not say how it counts. Name the GGUF "
    "file it runs in Settings, Engine, for exact counts."
)

WARN_AT = 0.70
CRITICAL_AT = 0.90


class _Bar(QWidget):
    def __init__(self, owner: ContextBar) -> None:
        super().__init__(owner)
        self._owner = owner
        self.setMinimumWidth(48)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(240, 10)

    def paintEvent(self, event: QPaintEvent) -> None:
        c = current_colors()
        usage = self._owner.usage
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        clip = QPainterPath()
        clip.addRoundedRect(rect, 4, 4)
        painter.setClipPath(clip)
        painter.fillRect(rect, QColor(c.seg_free))
        if usage is not None and usage.window > 0:
            x = rect.left()
            scale = rect.width() / usage.window
            drawn = (
                [(usage.segments.get(key, 0), getattr(c, colour)) for key, _t, colour in SEGMENTS]
                if usage.segments else [(usage.prompt_tokens, c.seg_conversation)]
            )
            for tokens, colour in drawn:
                width = tokens * scale
                if width > 0:
                    painter.fillRect(QRectF(x, rect.top(), width, rect.height()), QColor(colour))
                    x += width
            reserve_x = max(x, rect.right() - usage.reserve * scale)
            reserve = QRectF(reserve_x, rect.top(), rect.right() - reserve_x, rect.height())
            painter.fillRect(reserve, QColor(c.seg_reserve))
            painter.fillRect(reserve, Qt.BrushStyle.BDiagPattern)
            mark = self._owner.target_mark()
            if mark is not None:
                mark_x = rect.left() + mark * rect.width()
                painter.fillRect(QRectF(mark_x - 1, rect.top(), 2, rect.height()),
                                 QColor(c.text))
        painter.end()


class ContextBar(QWidget):
    """Shows a :class:`ContextUsage`; call :meth:`set_usage` and :meth:`set_counts`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ContextBar")
        self.usage: ContextUsage | None = None
        self.policy_text = ""
        self.prunes = 0
        self.pruned_tokens = 0
        self.compactions = 0
        #: The figure in full ("7,420 / 8,192 (91%)") and short ("91%", a narrow window).
        self._long = self._short = ""
        layout = self._row = hbox(self, (0, 0, 0, 0), 8)
        self.caption = new_label("Context", "MutedLabel")
        self.bar = _Bar(self)
        self.label = new_label("– / –", "ContextLabel")
        self.label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        layout.addWidget(self.caption)
        layout.addWidget(self.bar, 1)
        layout.addWidget(self.label)
        self._refresh()

    def minimumSizeHint(self) -> QSize:
        """What the bar needs with the short figure and no caption (a narrow window)."""
        return QSize(self._needed(self._short, caption=False),
                     super().minimumSizeHint().height())

    def _needed(self, text: str, *, caption: bool) -> int:
        spacing = self._row.spacing()
        margins = self.label.contentsMargins()
        label = self.label.fontMetrics().horizontalAdvance(text) + margins.left() \
            + margins.right() + 2
        width = self.bar.minimumWidth() + spacing + label
        return width + (self.caption.sizeHint().width() + spacing if caption else 0)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        """The whole figure and the caption "Context" where there is room; in a narrow
        window the percentage alone (the tooltip has every figure)."""
        room = self.width()
        self.label.setText(self._long if room >= self._needed(self._long, caption=False)
                           else self._short)
        self.caption.setVisible(room >= self._needed(self._long, caption=True))

    # -- state -------------------------------------------------------------------------
    @property
    def fraction(self) -> float:
        if self.usage is None or self.usage.window <= 0:
            return 0.0
        return self.usage.prompt_tokens / self.usage.window

    def target_mark(self) -> float | None:
        """The history's target as a share of the bar (None: the window is the target)."""
        usage = self.usage
        if usage is None or usage.window <= 0 or not 0 < usage.target < usage.window:
            return None
        return usage.target / usage.window

    @property
    def level(self) -> Level:
        if self.fraction > CRITICAL_AT:
            return "critical"
        return "warning" if self.fraction > WARN_AT else "ok"

    def level_color(self) -> str:
        c = current_colors()
        return {"ok": c.muted, "warning": c.warning, "critical": c.error}[self.level]

    def set_usage(self, usage: ContextUsage | None) -> None:
        self.usage = usage
        self._refresh()

    def set_policy_text(self, text: str) -> None:
        self.policy_text = text
        self._refresh()

    def set_counts(self, prunes: int, pruned_tokens: int, compactions: int) -> None:
        self.prunes = prunes
        self.pruned_tokens = pruned_tokens
        self.compactions = compactions
        self._refresh()

    def add_prune(self, tokens: int) -> None:
        self.set_counts(self.prunes + 1, self.pruned_tokens + tokens, self.compactions)

    # -- rendering ---------------------------------------------------------------------
    def _refresh(self) -> None:
        usage = self.usage
        if usage is None:
            self._long, self._short = "– / – tokens", "–"
        else:
            pct = round(self.fraction * 100)
            about = "≈ " if usage.estimated else ""
            self._long = f"{about}{usage.prompt_tokens:,} / {usage.window:,} ({pct}%)"
            self._short = f"{about}{pct}%"
        self.label.setText(self._long)
        weight = "600" if self.level != "ok" else "normal"
        self.label.setStyleSheet(f"color: {self.level_color()}; font-weight: {weight};")
        self.setToolTip(self.tooltip_text())
        self.bar.update()
        if self.isVisible():  # a longer figure may not fit
            self._fit()
        self.updateGeometry()

    def tooltip_text(self) -> str:
        lines: list[str] = []
        usage = self.usage
        if usage is None:
            lines.append("No prompt counted yet (send a message).")
        else:
            free = max(0, usage.window - usage.prompt_tokens - usage.reserve)
            lines.append(
                f"Prompt: {usage.prompt_tokens:,} of {usage.window:,} tokens ({self.fraction:.1%})"
            )
            for key, title, _colour in SEGMENTS:
                lines.append(f"  {title}: {usage.segments.get(key, 0):,}")
            lines.append(f"Reserved for the reply: {usage.reserve:,}")
            lines.append(f"Free: {free:,}")
            if self.target_mark() is not None:
                lines.append(
                    f"History kept within {usage.target:,} tokens (the mark), the size this "
                    "model was measured to use well; a long latest message may use the "
                    "whole window."
                )
            if usage.estimated:
                lines.append(ESTIMATE_NOTE)
        lines.append(
            f"In this chat: {self.prunes:,} prune{'s' if self.prunes != 1 else ''} "
            f"({self.pruned_tokens:,} tokens cleared), {self.compactions:,} "
            f"compaction{'s' if self.compactions != 1 else ''}"
        )
        if self.policy_text:
            lines.append(f"Mode {self.policy_text}")
        lines.append("Yellow above 70 %, red above 90 % of the window.")
        return "\n".join(lines)
