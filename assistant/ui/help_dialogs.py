"""The Help menu's windows: a short guide to the window, the keyboard shortcuts (read from
the menus' own actions, so the list cannot drift from what the keys do) and About."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QWidget

from assistant import __version__
from assistant.ui.parts import vbox

GUIDE = """\
### Chatting
Type a message and press **Enter** (**Shift+Enter** starts a new line). The reply appears
as it is written; **Esc** stops it. A stopped or failed question gets a **Retry** button,
and a reply that reached its length limit gets **Continue**.

### Files
Drop files anywhere on the window: they are copied into the workspace folder and read into
the chat. `/read PATH` reads a file of the workspace. Type `/` to see every command.

### Long chats
The model can only look at a limited amount of text at once. When a chat grows past that,
the oldest messages are summarized for the model. Every message stays on screen: a divider,
"The model now sees a summary of everything above", marks the place, and clicking it shows
the summary the model gets instead.

### Versions of a message
**Edit** one of your messages or **Regenerate** a reply to make a new version; `< >` shows
the other versions. **Delete** makes a version without the message: nothing is lost.

### Each chat
Right-click a chat in the list to rename or delete it, or to choose its model and
instructions (the model's name in the status bar opens them too). The bar under the input
shows how full the model's view of the chat is.

### The window
**Ctrl+=** and **Ctrl+-** make all text larger or smaller, **Ctrl+0** resets; the size is
kept. Help → Keyboard shortcuts lists every key.
"""

#: Keys that are not menu entries.
OTHER_KEYS = (
    ("Enter", "Send the message"),
    ("Shift+Enter", "New line in the message"),
    ("Esc", "Stop the reply, or cancel an edit"),
    ("Up (in an empty input)", "Edit your last message"),
    ("/", "Commands (/help lists them)"),
)


def shortcuts_markdown(actions: Iterable[QAction]) -> str:
    """A table of every action's key (as the menus show it), then the other keys."""
    rows: list[tuple[str, str]] = []
    for action in actions:
        keys = ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText)
                         for k in action.shortcuts())
        name = action.text().replace("&", "").split("\t")[0].rstrip("…")
        if keys:
            rows.append((keys, name))
    rows.extend(OTHER_KEYS)
    lines = ["| Key | Does |", "|---|---|"]
    lines += ["| " + keys.replace("|", "\\|") + f" | {name} |" for keys, name in rows]
    return "\n".join(lines)


def about_markdown(model_name: str) -> str:
    """What the app is, its version and the model in use."""
    model = f"Model in use: **{model_name}**." if model_name else "No model is loaded."
    return (
        f"## Offline Assistant {__version__}\n\n"
        "A chat assistant that runs a language model on this computer: nothing you type "
        "leaves it.\n\n"
        f"{model}\n\n"
        "Built on llama.cpp (through llama-cpp-python) and Qt (PySide6)."
    )


class HelpDialog(QDialog):
    """A window of Markdown text with a Close button (not modal: the chat stays usable)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = vbox(self, (16, 14, 16, 12), 10)
        self.text = QTextBrowser(openExternalLinks=True)
        layout.addWidget(self.text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(620, 520)

    def show_text(self, title: str, markdown: str) -> None:
        """Show ``markdown`` under ``title`` (the window is reused for each Help entry)."""
        self.setWindowTitle(title)
        self.text.setAccessibleName(title)
        self.text.setMarkdown(markdown)
        self.show()
        self.raise_()
        self.activateWindow()
