"""Small pieces the window's pages share: labels, number fields, sizes, and reading, filling
and watching the inputs of the settings forms by one rule per kind of input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
)

#: An input of a settings form, read and filled by :func:`field_value` and :func:`set_field`.
Field = QCheckBox | QSpinBox | QDoubleSpinBox | QComboBox | QLineEdit | QPlainTextEdit
F = TypeVar("F", bound=Field)
K = TypeVar("K")


def new_label(text: str, name: str = "", *, wrap: bool = False, selectable: bool = False
              ) -> QLabel:
    """A label styled by its object ``name`` (``MutedLabel``, ``RoleLabel``, ...), wrapped and
    selectable with the mouse when asked."""
    label = QLabel(text)
    if name:
        label.setObjectName(name)
    if wrap:
        label.setWordWrap(True)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def help_label(text: str) -> QLabel:
    """The grey, wrapped explanation under a field (styled as ``FieldHelp``)."""
    return new_label(text, "FieldHelp", wrap=True)


def spin_box(
    minimum: int, maximum: int, suffix: str = "", special: str = "", width: int = 96
) -> QSpinBox:
    """A right-aligned number field with thousands separators; ``special`` names its minimum."""
    box = QSpinBox()
    box.setRange(minimum, maximum)
    box.setGroupSeparatorShown(True)
    box.setAlignment(Qt.AlignmentFlag.AlignRight)
    box.setMinimumWidth(width)
    box.setMinimumHeight(28)
    if suffix:
        box.setSuffix(suffix)
    if special:
        box.setSpecialValueText(special)
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
