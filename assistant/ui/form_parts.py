"""Small pieces the settings pages and the Models window share."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel


def help_label(text: str) -> QLabel:
    """The grey, wrapped explanation under a field (styled as ``FieldHelp``)."""
    label = QLabel(text)
    label.setObjectName("FieldHelp")
    label.setWordWrap(True)
    return label


def format_size(size: int) -> str:
    """Bytes as a person reads them: KB under a megabyte, MB under a gigabyte, else GB."""
    if size < 1 << 20:
        return f"{max(1, size // 1024):,} KB"
    if size < 1 << 30:
        return f"{max(1, round(size / (1 << 20))):,} MB"
    return f"{size / (1 << 30):.1f} GB"
