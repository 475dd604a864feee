"""Light and dark themes: a colour palette, a QPalette and one stylesheet per theme.

``theme = "system"`` follows the desktop (``QStyleHints.colorScheme``, Qt >= 6.5) and
switches live when the desktop does; "light" and "dark" force one.
"""

from __future__ import annotations

from typing import Literal

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QPainter,
    QPalette,
    QPen,
    QPixmap,
)
from PySide6.QtWidgets import QApplication

from assistant import paths
from assistant.config import Theme

ThemeName = Literal["light", "dark"]


#: Each colour as (light, dark). The ``seg_`` colours are the context bar's segments
#: (``seg_tools``: tool outputs; ``seg_schemas``: the tool descriptions the prompt carries);
#: ``disabled_text`` greys out controls that cannot be used now, clearly unlike enabled ones.
_COLOURS: dict[str, tuple[str, str]] = {
    "window": ("#f5f6f8", "#1c1d21"),
    "surface": ("#ffffff", "#25272c"),
    "sidebar": ("#eceef2", "#202226"),
    "text": ("#1f2328", "#e4e6eb"),
    "muted": ("#606a76", "#9aa3ae"),
    "border": ("#d5dae1", "#383b42"),
    "accent": ("#2f6feb", "#5b8def"),
    "accent_text": ("#ffffff", "#ffffff"),
    "selection": ("#cfe0ff", "#2f4a78"),
    "user_bubble": ("#e7efff", "#2b3a55"),
    "assistant_bubble": ("#ffffff", "#282a30"),
    "code_bg": ("#f3f4f6", "#17181b"),
    "card_bg": ("#f8f9fb", "#2c2f35"),
    "warning": ("#9a6700", "#e3b341"),
    "warning_bg": ("#fff6d6", "#3a3220"),
    "error": ("#c4232d", "#ff7b72"),
    "error_bg": ("#ffebe9", "#3d2325"),
    "info_bg": ("#eef3fb", "#24303f"),
    "ok": ("#1a7f37", "#3fb950"),
    "seg_system": ("#8c959f", "#8b949e"),
    "seg_summary": ("#8250df", "#a371f7"),
    "seg_conversation": ("#2f6feb", "#5b8def"),
    "seg_tools": ("#1a9e75", "#2ebd8f"),
    "seg_schemas": ("#bf8700", "#d29922"),
    "seg_reserve": ("#c8ced6", "#4a4e57"),
    "seg_free": ("#e9ecf0", "#30333a"),
    "disabled_text": ("#a3aab4", "#5d636c"),
}


class Colors:
    """Every colour the UI uses in one theme, by purpose (``c.accent``: a key of
    ``_COLOURS``)."""

    def __init__(self, name: ThemeName) -> None:
        self.name = name
        self._values = {key: pair[1 if name == "dark" else 0] for key, pair in _COLOURS.items()}

    def __getattr__(self, key: str) -> str:
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(key) from None


LIGHT = Colors("light")
DARK = Colors("dark")


def _colors_for(theme: Theme) -> Colors:
    """The colours of a theme setting (``system`` follows the desktop's colour scheme)."""
    if theme == "system":
        dark = QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark
        return DARK if dark else LIGHT
    return DARK if theme == "dark" else LIGHT


def monospace_font() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


#: The zoom in force (percent) and the application's font at 100 % (taken at the first
#: zoom, before it is changed).
_zoom = {"percent": 100}
_base_font: list[QFont] = []


def zoom_percent() -> int:
    """The zoom in force for the whole window, in percent."""
    return _zoom["percent"]


def _scaled(font: QFont, percent: int) -> QFont:
    font = QFont(font)
    if font.pointSizeF() > 0:
        font.setPointSizeF(font.pointSizeF() * percent / 100)
    elif font.pixelSize() > 0:
        font.setPixelSize(max(1, round(font.pixelSize() * percent / 100)))
    return font


def zoomed_font(percent: int | None = None, *, mono: bool = False) -> QFont:
    """The application's font (or the monospace one) at ``percent`` of its 100 % size
    (the zoom in force when None)."""
    base = monospace_font() if mono else (
        _base_font[0] if _base_font else QFont(QGuiApplication.font()))
    return _scaled(base, zoom_percent() if percent is None else percent)


def mono_font() -> QFont:
    """The monospace font at the zoom in force (code, tool output)."""
    return zoomed_font(mono=True)


def apply_zoom(app: QApplication, percent: int) -> None:
    """Scale every widget's text to ``percent``: the application font (which widgets
    without a font of their own follow), the stylesheet's font sizes, and each widget
    that set the monospace font (code blocks, tool output) gets it at the new size."""
    if not _base_font:
        _base_font.append(QFont(app.font()))
    if percent == _zoom["percent"] and app.property("assistantZoom") == percent:
        return
    _zoom["percent"] = percent
    app.setProperty("assistantZoom", percent)
    app.setFont(_scaled(_base_font[0], percent))
    app.setStyleSheet(stylesheet(current_colors(), percent))
    mono = mono_font()
    for widget in app.allWidgets():
        own = widget.testAttribute(Qt.WidgetAttribute.WA_SetFont)
        if own and widget.font().family() == mono.family():
            widget.setFont(mono)


_ROLE = QPalette.ColorRole
#: Each palette role and the colour it takes (disabled text is muted).
_PALETTE = (
    (_ROLE.Window, "window"), (_ROLE.WindowText, "text"), (_ROLE.Base, "surface"),
    (_ROLE.AlternateBase, "card_bg"), (_ROLE.Text, "text"), (_ROLE.PlaceholderText, "muted"),
    (_ROLE.Button, "surface"), (_ROLE.ButtonText, "text"), (_ROLE.Highlight, "accent"),
    (_ROLE.HighlightedText, "accent_text"), (_ROLE.ToolTipBase, "surface"),
    (_ROLE.ToolTipText, "text"), (_ROLE.Link, "accent"), (_ROLE.Mid, "border"),
)


def _palette(c: Colors) -> QPalette:
    pal = QPalette()
    for role, colour in _PALETTE:
        pal.setColor(role, QColor(getattr(c, colour)))
    for role in (_ROLE.Text, _ROLE.ButtonText, _ROLE.WindowText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor(c.muted))
    return pal


def _arrow_image(c: Colors) -> str:
    """A small chevron for combo boxes, drawn in the theme's muted colour (QSS needs a
    file); kept in the cache dir."""
    path = paths.cache_dir() / f"combo-arrow-{c.name}.png"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        pixmap = QPixmap(20, 12)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pen = QPen(QColor(c.muted), 2.4)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        painter.setPen(pen)
        painter.drawPolyline([QPointF(3, 3), QPointF(10, 9), QPointF(17, 3)])
        painter.end()
        pixmap.save(str(path))
    return path.as_posix()


def stylesheet(c: Colors, zoom: int = 100) -> str:
    """The application stylesheet at ``zoom`` percent; widgets are picked by objectName
    and properties."""

    def pt(size: float) -> str:
        return f"{size * zoom / 100:.1f}pt"

    try:
        arrow = _arrow_image(c)
    except OSError:
        arrow = ""
    return f"""
QWidget {{ color: {c.text}; }}
QMainWindow, QDialog {{ background: {c.window}; }}
QToolTip {{ background: {c.surface}; color: {c.text}; border: 1px solid {c.border};
            padding: 6px; }}
#Sidebar {{ background: {c.sidebar}; border-right: 1px solid {c.border}; }}
#Sidebar QListWidget {{ background: transparent; border: none; outline: none; }}
#Sidebar QListWidget::item {{ padding: 7px 10px; border-radius: 6px; margin: 1px 4px; }}
#Sidebar QListWidget::item:hover {{ background: {c.border}; }}
#Sidebar QListWidget::item:selected {{ background: {c.selection}; color: {c.text}; }}
#SidebarTitle {{ font-weight: 600; color: {c.muted}; }}
#UndoBar {{ background: {c.surface}; border: 1px solid {c.border}; border-radius: 6px; }}
QLineEdit, QPlainTextEdit, QTextEdit, QSpinBox, QDoubleSpinBox, QComboBox {{
    background: {c.surface}; border: 1px solid {c.border}; border-radius: 6px;
    padding: 4px 6px; selection-background-color: {c.selection}; selection-color: {c.text};
}}
QSpinBox::up-button, QSpinBox::down-button, QDoubleSpinBox::up-button,
QDoubleSpinBox::down-button {{ width: 0px; border: none; }}
QComboBox::drop-down {{ border: none; width: 22px; }}
QComboBox::down-arrow {{ image: url({arrow}); width: 10px; height: 6px; }}
QComboBox QAbstractItemView {{ background: {c.surface}; border: 1px solid {c.border};
    selection-background-color: {c.selection}; selection-color: {c.text}; }}
QLineEdit:focus, QPlainTextEdit:focus, QSpinBox:focus, QDoubleSpinBox:focus,
QComboBox:focus {{ border: 1px solid {c.accent}; }}
QLineEdit[invalid="true"], QSpinBox[invalid="true"], QDoubleSpinBox[invalid="true"],
QPlainTextEdit[invalid="true"] {{ border: 1px solid {c.error}; }}
QPushButton, QToolButton {{
    background: {c.surface}; border: 1px solid {c.border}; border-radius: 6px;
    padding: 5px 12px;
}}
QPushButton:hover, QToolButton:hover {{ border-color: {c.accent}; }}
QPushButton:disabled, QToolButton:disabled {{ color: {c.disabled_text};
    background: {c.window}; border: 1px dashed {c.border}; }}
QMenuBar {{ background: {c.sidebar}; border-bottom: 1px solid {c.border}; }}
QMenuBar::item {{ padding: 4px 10px; background: transparent; }}
QMenuBar::item:selected {{ background: {c.selection}; border-radius: 4px; }}
QMenu {{ background: {c.surface}; border: 1px solid {c.border}; padding: 4px 0; }}
QMenu::item {{ padding: 5px 28px 5px 14px; }}
QMenu::item:selected {{ background: {c.selection}; color: {c.text}; }}
QMenu::item:disabled {{ color: {c.disabled_text}; }}
QMenu::separator {{ height: 1px; background: {c.border}; margin: 4px 8px; }}
QPushButton#PrimaryButton {{ background: {c.accent}; color: {c.accent_text};
    border: 1px solid {c.accent}; font-weight: 600; }}
QPushButton#PrimaryButton:disabled {{ background: {c.border}; border-color: {c.border};
    color: {c.muted}; }}
QPushButton#StopButton {{ background: {c.error}; color: #ffffff; border: 1px solid {c.error};
    font-weight: 600; }}
QToolButton#MessageAction, QToolButton#BranchButton {{ border: none; background: transparent;
    color: {c.muted}; padding: 2px 6px; }}
QToolButton#MessageAction:hover, QToolButton#BranchButton:hover {{ color: {c.accent}; }}
QLabel#BranchLabel, QLabel#RoleLabel, QLabel#MutedLabel {{ color: {c.muted}; }}
QLabel#RoleLabel {{ font-weight: 600; }}
#ChatView, #ChatViewport {{ background: {c.window}; border: none; }}
QFrame#Bubble[role="user"] {{ background: {c.user_bubble}; border-radius: 10px; }}
QFrame#Bubble[role="assistant"] {{ background: {c.assistant_bubble}; border-radius: 10px;
    border: 1px solid {c.border}; }}
QFrame#CodeBlock {{ background: {c.code_bg}; border: 1px solid {c.border};
    border-radius: 6px; }}
QFrame#CodeBlock QLabel#CodeLang {{ color: {c.muted}; }}
QFrame#CodeBlock QTextBrowser {{ background: {c.code_bg}; border: none; }}
QFrame#ToolCard {{ background: {c.card_bg}; border: 1px solid {c.border};
    border-radius: 8px; }}
QPushButton#CardHeader {{ border: none; background: transparent; font-weight: 600;
    text-align: left; padding: 4px 2px; }}
QPushButton#CardHeader:hover {{ color: {c.accent}; }}
QLabel#CardMono, QTextBrowser#CardMono {{ background: {c.code_bg}; border-radius: 4px;
    padding: 6px; }}
QLabel#PrunedNote {{ color: {c.warning}; }}
QFrame#Notice {{ border-radius: 8px; padding: 2px; }}
QFrame#Notice[level="info"] {{ background: {c.info_bg}; }}
QFrame#Notice[level="warning"] {{ background: {c.warning_bg}; }}
QFrame#Notice[level="warning"] QLabel {{ color: {c.warning}; }}
QFrame#Notice[level="error"] {{ background: {c.error_bg}; border: 1px solid {c.error}; }}
QFrame#Notice[level="error"] QLabel {{ color: {c.error}; }}
QFrame#CompactionNotice {{ background: transparent; border: none; }}
QFrame#DividerRule {{ background: {c.seg_summary}; border: none; max-height: 1px; }}
QPushButton#DividerHeader {{ border: 1px solid {c.seg_summary}; border-radius: 11px;
    background: {c.info_bg}; padding: 3px 12px; font-weight: 600; }}
QPushButton#DividerHeader:hover {{ color: {c.accent}; border-color: {c.accent}; }}
QFrame#SummaryBox {{ background: {c.info_bg}; border: 1px dashed {c.seg_summary};
    border-radius: 8px; }}
QLabel#PruneNotice {{ color: {c.muted}; font-size: {pt(9)}; }}
#ComposerFrame {{ background: {c.surface}; border-top: 1px solid {c.border}; }}
#ChatInput {{ border-radius: 8px; padding: 6px 8px; }}
#StatusStrip {{ background: {c.info_bg}; border-top: 1px solid {c.border}; }}
#ModelBanner {{ background: {c.error_bg}; border-bottom: 1px solid {c.error}; }}
#ModelBanner QLabel {{ color: {c.error}; }}
QStatusBar {{ background: {c.sidebar}; color: {c.muted}; border-top: 1px solid {c.border}; }}
QStatusBar QLabel {{ color: {c.muted}; padding: 0 6px; }}
QProgressBar {{ border: 1px solid {c.border}; border-radius: 4px; background: {c.surface};
    text-align: center; max-height: 12px; font-size: {pt(8)}; }}
QProgressBar::chunk {{ background: {c.accent}; border-radius: 3px; }}
QScrollBar:vertical {{ background: transparent; width: 10px; margin: 0; }}
QScrollBar::handle:vertical {{ background: {c.border}; border-radius: 5px; min-height: 30px; }}
QScrollBar::add-line:vertical, QScrollBar::sub-line:vertical {{ height: 0; }}
QScrollBar::add-page:vertical, QScrollBar::sub-page:vertical {{ background: none; }}
QScrollBar:horizontal {{ background: transparent; height: 10px; margin: 0; }}
QScrollBar::handle:horizontal {{ background: {c.border}; border-radius: 5px; min-width: 30px; }}
QScrollBar::add-line:horizontal, QScrollBar::sub-line:horizontal {{ width: 0; }}
QTabWidget::pane {{ border: 1px solid {c.border}; border-radius: 6px; background: {c.surface};
    top: -1px; }}
QTabBar::tab {{ padding: 6px 14px; border: 1px solid transparent; color: {c.muted}; }}
QTabBar::tab:selected {{ color: {c.text}; border-bottom: 2px solid {c.accent}; }}
QGroupBox {{ border: 1px solid {c.border}; border-radius: 6px; margin-top: 12px;
    padding: 10px 8px 8px 8px; }}
QGroupBox::title {{ subcontrol-origin: margin; left: 10px; padding: 0 4px; color: {c.muted};
    font-weight: 600; }}
QLabel#ErrorText {{ color: {c.error}; }}
QLabel#FieldHelp {{ color: {c.muted}; font-size: {pt(9)}; }}
QListView#SlashPopup {{ background: {c.surface}; border: 1px solid {c.border};
    selection-background-color: {c.selection}; selection-color: {c.text}; padding: 2px; }}
QSplitter::handle {{ background: {c.border}; }}
QToolButton#MessageAction:disabled, QToolButton#BranchButton:disabled {{ color: {c.border}; }}
#WelcomeView, #WelcomeInner {{ background: {c.window}; border: none; }}
QLabel#WelcomeTitle {{ font-size: {pt(20)}; font-weight: 600; }}
QLabel#WelcomeSection {{ font-weight: 600; font-size: {pt(11)}; }}
QLabel#WorkspacePath {{ background: {c.surface}; border: 1px solid {c.border};
    border-radius: 6px; padding: 5px 8px; }}
QPushButton#ExamplePrompt {{ text-align: left; padding: 8px 12px; background: {c.surface}; }}
QLabel#DropOverlay {{ background: {c.info_bg}; color: {c.accent}; font-size: {pt(13)};
    font-weight: 600; border: 2px dashed {c.accent}; border-radius: 12px; }}
QFileDialog QToolButton {{ padding: 2px; }}
#PromptProgress {{ background: {c.info_bg}; border-top: 1px solid {c.border}; }}
QLabel#MessageFooter {{ color: {c.muted}; font-size: {pt(8)}; }}
#ModelList {{ background: transparent; }}
QFrame#ModelCard {{ background: {c.surface}; border: 1px solid {c.border}; border-radius: 8px; }}
QFrame#ModelCard[loaded="true"] {{ border: 1px solid {c.accent}; }}
QLabel#ModelTitle {{ font-weight: 600; font-size: {pt(11)}; }}
QLabel#ModelState {{ border-radius: 8px; padding: 1px 8px; font-size: {pt(8)};
    background: {c.seg_free}; color: {c.muted}; }}
QLabel#ModelState[state="loaded"] {{ background: {c.accent}; color: {c.accent_text}; }}
QLabel#ModelState[state="installed"] {{ background: {c.info_bg}; color: {c.ok}; }}
QLabel#ModelState[state="file-missing"] {{ background: {c.error_bg}; color: {c.error}; }}
QLabel#ModelPath {{ color: {c.muted}; font-size: {pt(8)}; }}
QLabel#ModelsMessage {{ color: {c.text}; }}
QLabel#InstallNote {{ color: {c.warning}; }}
QLabel#ModelsMessage[error="true"] {{ color: {c.error}; }}
QPushButton#StatusButton {{ border: none; background: transparent; color: {c.muted};
    padding: 0 6px; }}
QPushButton#StatusButton:hover {{ color: {c.accent}; text-decoration: underline; }}
"""


def apply_theme(app: QApplication, theme: Theme) -> Colors:
    c = _colors_for(theme)
    app.setProperty("assistantTheme", c.name)
    app.setPalette(_palette(c))
    app.setStyleSheet(stylesheet(c, zoom_percent()))
    return c


def current_colors() -> Colors:
    """The colours in force (read back from the application property)."""
    app = QApplication.instance()
    name = app.property("assistantTheme") if app is not None else None
    return DARK if name == "dark" else LIGHT
