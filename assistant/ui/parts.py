"""Small pieces the window's panels, pages and dialogs share: box layouts, labels, buttons,
number fields, a label that elides, sizes, and reading, filling and watching the inputs of
the settings forms by one rule per kind of input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from PySide6.QtCore import QSize, Qt, SignalInstance
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QAbstractButton,
    QBoxLayout,
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

Margins = tuple[int, int, int, int]
L = TypeVar("L", bound=QBoxLayout)
B = TypeVar("B", bound=QAbstractButton)
#: An input of a settings form, read and filled by :func:`field_value` and :func:`set_field`.
Field = QCheckBox | QSpinBox | QDoubleSpinBox | QComboBox | QLineEdit | QPlainTextEdit
F = TypeVar("F", bound=Field)
K = TypeVar("K")
D = TypeVar("D", bound=QDialog)
OnClick = Callable[[], object] | SignalInstance | None


# -- layouts -----------------------------------------------------------------------------
def hbox(parent: QWidget, margins: Margins, spacing: int | None = None) -> QHBoxLayout:
    return _spaced(QHBoxLayout(parent), margins, spacing)


def vbox(parent: QWidget, margins: Margins, spacing: int | None = None) -> QVBoxLayout:
    return _spaced(QVBoxLayout(parent), margins, spacing)


def _spaced(layout: L, margins: Margins, spacing: int | None) -> L:
    layout.setContentsMargins(*margins)
    if spacing is not None:
        layout.setSpacing(spacing)
    return layout


def sentence(text: str) -> str:
    """``text`` ended with one full stop: none added after a quote that ends with its own
    (“Answer briefly.” not “Answer briefly.”.)."""
    bare = text.rstrip().rstrip("”’\"')")
    return text if bare.endswith((".", "!", "?", "…")) else text + "."


def form_layout(parent: QWidget | None, spacing: tuple[int, int], *, fixed: bool = False
                ) -> QFormLayout:
    """A form with (vertical, horizontal) ``spacing``; ``fixed``: inputs keep their size."""
    form = QFormLayout(parent)
    form.setVerticalSpacing(spacing[0])
    form.setHorizontalSpacing(spacing[1])
    if fixed:
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
    return form


def vertical_scroller(area: QScrollArea) -> QScrollArea:
    """``area`` without a frame, its content as wide as the area, scrolling only up and down."""
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return area


# -- labels and buttons ------------------------------------------------------------------
def new_label(text: str, name: str = "", *, wrap: bool = False, selectable: bool = False
              ) -> QLabel:
    """A label styled by its object ``name`` (``MutedLabel``, ``RoleLabel``, ...), wrapped and
    selectable with the mouse when asked."""
    label = QLabel(text, wordWrap=wrap)
    if name:
        label.setObjectName(name)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def help_label(text: str) -> QLabel:
    """The grey, wrapped explanation under a field (styled as ``FieldHelp``)."""
    return new_label(text, "FieldHelp", wrap=True)


def styled_button(widget: B, text: str, slot: OnClick = None, *, name: str = "",
                  tip: str = "", accessible: str = "") -> B:
    """``widget`` styled by its object ``name``, with its text, tooltip and accessible name,
    running ``slot`` when clicked."""
    widget.setText(text)
    for setter, value in ((widget.setObjectName, name), (widget.setToolTip, tip),
                          (widget.setAccessibleName, accessible)):
        if value:
            setter(value)
    if slot is not None:
        widget.clicked.connect(slot)
    return widget


def push_button(text: str, slot: OnClick = None, *, name: str = "", tip: str = "",
                accessible: str = "") -> QPushButton:
    return styled_button(QPushButton(), text, slot, name=name, tip=tip, accessible=accessible)


def action_button(text: str, tip: str, slot: OnClick = None) -> QToolButton:
    """The chat entries' small flat buttons (Copy, Edit, ...)."""
    action = styled_button(QToolButton(), text, slot, name="MessageAction", tip=tip)
    action.setCursor(Qt.CursorShape.PointingHandCursor)
    return action


def progress_bar(accessible: str, minimum_width: int, maximum_width: int, *, maximum: int = 100
                 ) -> QProgressBar:
    """A bar without its text (the words beside it say how far); ``maximum`` 0: busy."""
    bar = QProgressBar(textVisible=False, maximum=maximum)
    bar.setAccessibleName(accessible)
    bar.setMinimumWidth(minimum_width)
    bar.setMaximumWidth(maximum_width)
    return bar


def opened(dialog: D) -> D:
    """``dialog`` shown without blocking the event loop (tests drive it), deleted when closed."""
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog


class ElidedLabel(QLabel):
    """A one-line label: ``full_text`` is kept, the label shows as much as fits (``…`` in the
    middle) and the whole in its tooltip."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent, textFormat=Qt.TextFormat.PlainText)
        self.full_text = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.set_full_text(text)

    def set_full_text(self, text: str) -> None:
        self.full_text = text
        self.setToolTip(text)
        self._elide()

    def minimumSizeHint(self) -> QSize:
        return QSize(40, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(0, self.contentsRect().width())
        middle = Qt.TextElideMode.ElideMiddle
        self.setText(self.fontMetrics().elidedText(self.full_text, middle, width))


# -- form inputs -------------------------------------------------------------------------
def spin_box(
    minimum: int, maximum: int, suffix: str = "", special: str = "", width: int = 96
) -> QSpinBox:
    """A right-aligned number field with thousands separators; ``special`` names its minimum."""
    box = QSpinBox(minimum=minimum, maximum=maximum, suffix=suffix)
    box.setGroupSeparatorShown(True)
    box.setAlignment(Qt.AlignmentFlag.AlignRight)
    box.setMinimumWidth(width)
    box.setMinimumHeight(28)
    if special:
        box.setSpecialValueText(special)
    return box


def combo_box(*items: tuple[str, str]) -> QComboBox:
    """A drop-down list of (title, the value it stands for)."""
    box = QComboBox()
    for title, value in items:
        box.addItem(title, value)
    return box


def add_field(form: QFormLayout, label: str, widget: F, fields: dict[K, Field], key: K) -> F:
    """Put ``widget`` in a row of ``form`` (the whole row without a ``label``) and in
    ``fields`` under ``key``, where its value lives in the settings."""
    fields[key] = widget
    if label:
        form.addRow(label, widget)
    else:
        form.addRow(widget)
    return widget


def field_value(widget: Field) -> Any:
    """What the input holds, as the settings keep it: a combo box's item data (its text when
    the item has none), a line's text without the blanks around it."""
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QDoubleSpinBox):
        return round(widget.value(), 4)  # 0.15, not 0.15000000000000002, in the file
    if isinstance(widget, QSpinBox):
        return widget.value()
    if isinstance(widget, QComboBox):
        data = widget.currentData()
        return widget.currentText() if data is None else data
    if isinstance(widget, QPlainTextEdit):
        return widget.toPlainText()
    return widget.text().strip()


def set_field(widget: Field, value: Any) -> None:
    """Show ``value`` in the input (a combo box picks the item with that data, else text)."""
    if isinstance(widget, QCheckBox):
        widget.setChecked(bool(value))
    elif isinstance(widget, QDoubleSpinBox):
        widget.setValue(value)
    elif isinstance(widget, QSpinBox):
        widget.setValue(round(value))  # (a timeout in seconds is a float in the settings)
    elif isinstance(widget, QComboBox):
        index = widget.findData(value)
        widget.setCurrentIndex(max(0, index if index >= 0 else widget.findText(str(value))))
    elif isinstance(widget, QPlainTextEdit):
        widget.setPlainText(str(value))
    else:
        widget.setText(str(value))


def on_change(widget: Field, slot: Callable[[], object]) -> None:
    """Call ``slot`` whenever the input changes."""
    if isinstance(widget, QCheckBox):
        widget.toggled.connect(lambda *_a: slot())
    elif isinstance(widget, QSpinBox | QDoubleSpinBox):
        widget.valueChanged.connect(lambda *_a: slot())
    elif isinstance(widget, QComboBox):
        widget.currentIndexChanged.connect(lambda *_a: slot())
    else:
        widget.textChanged.connect(lambda *_a: slot())


def format_size(size: int) -> str:
    """Bytes as a person reads them, in decimal units (1 MB = 1,000,000 bytes, as file
    managers and the README count): kB under a megabyte, MB under a gigabyte, else GB."""
    if size < 1_000_000:
        return f"{max(1, round(size / 1000)):,} kB"
    if size < 1_000_000_000:
        return f"{max(1, round(size / 1_000_000)):,} MB"
    return f"{size / 1_000_000_000:.1f} GB"
