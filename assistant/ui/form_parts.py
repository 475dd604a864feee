"""Small pieces the window's pages share: labels, number fields, sizes."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSpinBox


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


def format_size(size: int) -> str:
    """Bytes as a person reads them, in decimal units (1 MB = 1,000,000 bytes, as file
    managers and the README count): kB under a megabyte, MB under a gigabyte, else GB."""
    if size < 1_000_000:
        return f"{max(1, round(size / 1000)):,} kB"
    if size < 1_000_000_000:
        return f"{max(1, round(size / 1_000_000)):,} MB"
    return f"{size / 1_000_000_000:.1f} GB"
