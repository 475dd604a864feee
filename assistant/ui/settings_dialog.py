# Over 500 lines: one page per settings group; speed and engine pages are apart.
"""The settings dialog: model, engine, sampling, context modes and their policies, chat and
look, speed.

Every change is validated by the pydantic :class:`Settings` model as you type (one pass over
the whole copy: a value on one page can make another invalid); a refused value is outlined
in red with pydantic's reason under the form, and Save stays disabled until all is valid.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QRadioButton,
    QScrollArea,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from assistant.config import (
    MODE_NAMES,
    SETTING_LABELS,
    CompactionSwitches,
    EngineSettings,
    Mode,
    ModePolicy,
    Settings,
    setting_name,
)
from assistant.secrets import SecretStoreError
from assistant.service import catalog
from assistant.service.catalog import BASE_MODEL_NOTE, ModelEntry, Registry, measured_line
from assistant.settings_check import check_against_model
from assistant.ui.engine_settings import EnginePage
from assistant.ui.parts import (
    Field,
    add_field,
    combo_box,
    field_value,
    form_layout,
    format_size,
    help_label,
    new_label,
    on_change,
    push_button,
    set_field,
    spin_box,
    vbox,
)
from assistant.ui.performance_page import PerformancePage, SpeedHooks

POLICY_FIELDS: tuple[tuple[str, str], ...] = tuple(
    (field, SETTING_LABELS[field])
    for field in ("window", "protect", "minimum", "reserve", "keep_recent", "summary_budget")
)
MODES = tuple((mode, mode.label) for mode in Mode)
SWITCHES = ("auto_compact", "compact_on_overflow", "prune", "compact_ahead", "read_ahead")
CHOOSE_FILE = "__choose__"
BIG = 100_000_000


def _form_page(*, fixed: bool = False) -> tuple[QWidget, QFormLayout]:
    page = QWidget()
    form = form_layout(page, (10, 16), fixed=fixed)
    form.setContentsMargins(16, 16, 16, 16)
    return page, form


def _mark(widget: QWidget, reason: str | None) -> None:
    """Outline ``widget`` in red with ``reason`` as its tooltip, or (None) take the outline off."""
    widget.setProperty("invalid", reason is not None)
    if reason is not None:
        widget.setToolTip(reason)
    widget.style().unpolish(widget)
    widget.style().polish(widget)


def _dspin(maximum: float) -> QDoubleSpinBox:
    box = QDoubleSpinBox(minimum=0.0, maximum=maximum, singleStep=0.05, decimals=2)
    box.setAlignment(Qt.AlignmentFlag.AlignRight)
    box.setMinimumHeight(28)
    return box


class SettingsDialog(QDialog):
    """Edit a copy of :class:`Settings`; accepted only when valid."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry | None = None,
        *,
        loaded_trained_context: int | None = None,
        model_present: Callable[[ModelEntry], bool] = lambda _e: True,
        count_tokens: Callable[[str], int | None] | None = None,
        speed: SpeedHooks | None = None,
        measured_context: int | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("SettingsDialog")
        self.setWindowTitle("Settings")
        self.setMinimumSize(700, 560)
        self._original = settings
        self._registry = registry
        self._loaded_trained = loaded_trained_context
        self._model_present = model_present
        #: The loaded model's measured size (what the engine keeps prompts within).
        self._measured = measured_context
        #: The loaded model's tokenizer (the system prompt is checked against its window);
        #: None: not counted yet (the window's counts are jobs; a count in validates again).
        self._count = count_tokens
        #: What saving will cap (windows beyond the model's trained length).
        self.notes: list[str] = []
        self._result: Settings | None = settings.model_copy(deep=True)
        self.errors: list[str] = []
        self._previous_model_index = 0
        speed = self._speed = speed or SpeedHooks()
        self._prefill_text = speed.prefill_text
        #: Each input by where its value lives in the settings (``("sampling", "top_p")``).
        self.fields: dict[tuple[str, ...], Field] = {}

        layout = vbox(self, (16, 14, 16, 12), 10)
        self.tabs = QTabWidget()
        self.engine_page = EnginePage()
        self.performance_page = PerformancePage(speed)
        self.pages: list[QWidget] = [self._build_model_tab(), self.engine_page,
                                     self._build_context_tab(), self._build_chat_tab(),
                                     self.performance_page]
        for page, title in zip(self.pages, ("Model", "Engine", "Context", "Chat && look",
                                            "Speed"), strict=True):
            # A page taller than the dialog scrolls instead of squeezing its rows together.
            scroll = QScrollArea(widgetResizable=True)
            scroll.setFrameShape(QScrollArea.Shape.NoFrame)
            scroll.setWidget(page)
            self.tabs.addTab(scroll, title)
        for name, widget in self.performance_page.fields.items():
            self.fields[("performance", name)] = widget
        layout.addWidget(self.tabs, 1)
        self.error_label = new_label("", "ErrorText", wrap=True, selectable=True)
        layout.addWidget(self.error_label)
        self.notes_label = help_label("")
        self.notes_label.setVisible(False)
        layout.addWidget(self.notes_label)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setObjectName("PrimaryButton")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)

        self._load(settings)
        self._connect_validation()
        self.validate()

    # -- building ----------------------------------------------------------------------
    def _build_model_tab(self) -> QWidget:
        page, form = _form_page(fixed=True)
        self.model_combo = QComboBox()
        self.model_combo.setMinimumWidth(320)
        if self._registry is not None:
            for entry in self._registry.models:
                self.model_combo.addItem(entry.display_name, entry.name)
        for added in catalog.list_models(None):  # GGUF files added in the Models window
            self.model_combo.addItem(added.display_name, added.key)
        self.model_combo.addItem("Choose a GGUF file…", CHOOSE_FILE)
        self.model_combo.activated.connect(self._model_activated)
        self.model_combo.currentIndexChanged.connect(self._update_model_info)
        form.addRow("Model", self.model_combo)
        self.model_info = help_label("")
        self.model_info.setMinimumWidth(440)
        form.addRow("", self.model_info)
        #: The measured effective context, and a button that measures the model in use.
        self.effective_context_info = help_label("")
        form.addRow("", self.effective_context_info)
        self.measure_button = push_button(
            "Measure now", self._measure,
            tip="Ask the model questions for a few minutes to find how much text it reads "
                "well (Esc stops)")
        form.addRow("", self.measure_button)
        fields = self.fields
        add_field(form, "CPU threads", spin_box(-1, 1024), fields, ("sampling", "threads"))
        self.threads_help = help_label(
            threads_help_text(self._prefill_text) + " Changing the model, the threads or the "
            "window reloads the model in the background."
        )
        self.threads_help.setMinimumWidth(440)
        form.addRow("", self.threads_help)
        self.temperature = add_field(form, "Temperature", _dspin(5.0),
                                     fields, ("sampling", "temperature"))
        add_field(form, "Top p", _dspin(1.5), fields, ("sampling", "top_p"))
        add_field(form, "Longest reply (tokens)", spin_box(0, 1_000_000),
                  fields, ("sampling", "max_reply_tokens"))
        return page

    def _build_context_tab(self) -> QWidget:
        page = QWidget()
        outer = vbox(page, (16, 12, 16, 12), 10)
        mode_row = QHBoxLayout()
        mode_row.addWidget(QLabel("Active mode"))
        self.mode_group = QButtonGroup(self)
        self.mode_buttons: dict[Mode, QRadioButton] = {}
        for mode, title in MODES:
            button = QRadioButton(title)
            self.mode_group.addButton(button)
            self.mode_buttons[mode] = button
            mode_row.addWidget(button)
        mode_row.addStretch(1)
        outer.addLayout(mode_row)
        outer.addWidget(help_label(
            "Local suits small models with about 10k tokens of context: tight reserve, early "
            "pruning. Standard suits large windows; on a smaller one it keeps more recent text "
            "and tool output word for word than Local does. Values are tokens."
        ))

        box = QGroupBox("Policy values")
        grid = QGridLayout(box)
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(6)
        grid.addWidget(QLabel(""), 0, 0)
        for col, (_key, title) in enumerate(MODES, start=1):
            header = new_label(title, "RoleLabel")
            grid.addWidget(header, 0, col, Qt.AlignmentFlag.AlignRight)
        eff_header = new_label("In effect", "RoleLabel")
        eff_header.setToolTip("What the active mode uses for the selected model")
        grid.addWidget(eff_header, 0, 3, Qt.AlignmentFlag.AlignRight)
        self.policy_spins: dict[tuple[str, str], QSpinBox] = {}
        self.effective_labels: dict[str, QLabel] = {}
        for row, (field, title) in enumerate(POLICY_FIELDS, start=1):
            label = QLabel(title)
            label.setToolTip(ModePolicy.model_fields[field].description or "")
            grid.addWidget(label, row, 0)
            for col, (mode, _title) in enumerate(MODES, start=1):
                spin = spin_box(-1, BIG)
                spin.setObjectName(f"{mode}_{field}")
                spin.setToolTip(ModePolicy.model_fields[field].description or "")
                self.policy_spins[(mode, field)] = self.fields[(mode, field)] = spin
                grid.addWidget(spin, row, col)
            eff = new_label("", "MutedLabel")
            eff.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            eff.setMinimumWidth(80)
            self.effective_labels[field] = eff
            grid.addWidget(eff, row, 3)
        grid.setColumnStretch(0, 1)
        outer.addWidget(box)
        self.effective_note = help_label("")
        outer.addWidget(self.effective_note)

        switches = QGroupBox("Automatic context management")
        sw = QVBoxLayout(switches)
        #: The compaction switches the dialog edits, by their settings name.
        self.switch_boxes = {key: QCheckBox(SETTING_LABELS[key]) for key in SWITCHES}
        (self.auto_compact, self.compact_on_overflow, self.prune, self.compact_ahead,
         self.read_ahead) = self.switch_boxes.values()
        self.prune.setText(SETTING_LABELS["prune"] + " (pruning)")
        ahead_help = CompactionSwitches.model_fields["compact_ahead"].description or ""
        self.compact_ahead.setToolTip(ahead_help)
        self.compact_ahead.setAccessibleDescription(ahead_help)
        draft_help = CompactionSwitches.model_fields["read_ahead"].description or ""
        self.read_ahead.setToolTip(draft_help)
        self.read_ahead.setAccessibleDescription(draft_help)
        for key, box_ in self.switch_boxes.items():
            sw.addWidget(box_)
            self.fields[("compaction", key)] = box_
        outer.addWidget(switches)
        outer.addStretch(1)
        return page

    def _build_chat_tab(self) -> QWidget:
        page, form = _form_page()
        fields = self.fields
        self.system_prompt = add_field(form, "System prompt", QPlainTextEdit(),
                                       fields, ("system_prompt",))
        self.system_prompt.setMinimumHeight(110)
        ws_row = QHBoxLayout()
        self.workspace = fields[("workspace",)] = QLineEdit(
            placeholderText="Default workspace folder"
        )
        self.workspace.setAccessibleName("Workspace folder")
        ws_row.addWidget(self.workspace, 1)
        ws_row.addWidget(push_button("Browse…", self._browse_workspace))
        form.addRow("Workspace folder", ws_row)
        form.addRow("", help_label("Tools read and write only inside this folder."))
        add_field(form, "Tool approval", combo_box(
            ("Ask before changing files or running commands", "ask"),
            ("Allow without asking", "auto"),
        ), fields, ("tool_approval",))
        self.theme = add_field(form, "Theme", combo_box(
            ("Follow the system", "system"), ("Light", "light"), ("Dark", "dark")
        ), fields, ("theme",))
        add_field(form, "Input", QCheckBox("Enter sends, Shift+Enter adds a line"),
                  fields, ("enter_sends",))
        add_field(form, "Tool steps per reply", spin_box(0, 1000), fields, ("step_limit",))
        return page

    # -- values ------------------------------------------------------------------------
    def _load(self, s: Settings) -> None:
        self.set_model_path(s.model)
        self.mode_buttons[s.mode].setChecked(True)
        for loc, widget in self.fields.items():
            value: Any = s
            for key in loc:
                value = getattr(value, key)
            set_field(widget, value)
        self.engine_page.load(s)
        self._update_model_info()

    def selected_mode(self) -> Mode:
        return next((key for key, b in self.mode_buttons.items() if b.isChecked()),
                    Settings.model_fields["mode"].default)

    def collect(self) -> dict[str, Any]:
        """The form as a plain dict, in the shape :class:`Settings` validates."""
        data = self._original.model_dump()
        data["model"] = str(self.model_combo.currentData() or self._original.model)
        data["mode"] = self.selected_mode()
        for (*path, last), widget in self.fields.items():
            target = data
            for key in path:
                target = target[key]
            target[last] = field_value(widget)
        data["engine"] = self.engine_page.collect()
        return data

    def _widgets_for(self, loc: tuple[int | str, ...]) -> list[QWidget]:
        if loc and str(loc[0]) in MODE_NAMES and len(loc) == 1:
            # The "must fit in the window" rule names four fields.
            fields = ("window", "reserve", "keep_recent", "summary_budget")
            return [self.policy_spins[(str(loc[0]), f)] for f in fields]
        widget = self._widget_for(loc)
        return [widget] if widget is not None else []

    def _widget_for(self, loc: tuple[int | str, ...]) -> QWidget | None:
        if not loc:
            return None
        head = str(loc[0])
        if head == "engine":
            return self.engine_page.widget_for(loc[1:])
        return self.fields.get(tuple(str(part) for part in loc[:2]))

    def validate(self) -> bool:
        """Validate the form; show the reasons inline. Returns whether it is valid."""
        engine = self.engine_page
        for field_widget in (*self.fields.values(), *engine.fields.values(), engine.model):
            if field_widget.property("invalid"):
                _mark(field_widget, None)
        self.errors = []
        try:
            self._result = Settings.model_validate(self.collect())
        except ValidationError as exc:
            self._result = None
            for err in exc.errors():
                loc = tuple(err.get("loc", ()))
                where = setting_name(loc)  # (as settings-file errors name it)
                msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
                self.errors.append(f"{where}: {msg}" if where else msg)
                for widget in self._widgets_for(loc):
                    _mark(widget, msg)
        if self._result is not None:
            self._check_against_model(self._result)
        valid = self._result is not None
        self.error_label.setText("\n".join(self.errors))
        self.error_label.setVisible(not valid)
        self.save_button.setEnabled(valid)
        self._update_effective()
        return valid

    def _check_against_model(self, settings: Settings) -> None:
        """Refuse what cannot work with the selected model; note what will be capped."""
        loaded = (
            self.model_combo.currentData() == self._original.model and self._same_engine_loaded()
        )
        counter = self._count if loaded else None
        check = check_against_model(settings, self.trained_context(), counter)
        self.notes = list(check.notes)
        self.notes_label.setText("\n".join(self.notes))
        self.notes_label.setVisible(bool(self.notes))
        if check.errors:
            self._result = None
            self.errors.extend(check.errors)
            _mark(self.system_prompt, check.errors[0])

    def result_settings(self) -> Settings | None:
        """The validated settings (None while the form has an error)."""
        return self._result

    def accept(self) -> None:
        if not self.validate() or self._result is None:
            return
        try:  # the API key goes to the keyring (or the private file), not the settings
            self.engine_page.store_key(self._result.engine)
        except SecretStoreError as exc:
            self.error_label.setText(f"Could not store the API key: {exc}")
            self.error_label.setVisible(True)
            self.show_page(self.engine_page)
            return
        super().accept()

    def show_page(self, page: QWidget) -> None:
        self.tabs.setCurrentIndex(self.pages.index(page))

    def current_page(self) -> QWidget:
        return self.pages[self.tabs.currentIndex()]

    def done(self, result: int) -> None:
        self.engine_page.wait_for_test(5.0)  # no connection test left running
        super().done(result)

    # -- model choice ------------------------------------------------------------------
    def _entry(self) -> ModelEntry | None:
        if self._registry is None:
            return None
        data = self.model_combo.currentData()
        entry = self._registry.get(str(data)) if data else None
        if entry is None and data and data != CHOOSE_FILE:
            entry = self._registry.by_file(Path(str(data)).name)
        return entry

    def trained_context(self) -> int | None:
        """The selected model's trained context: the registry's, or the file header's (None:
        unknown); with the server engine, the server's window as far as it is known."""
        if self.engine_page.uses_server():
            loaded = self._loaded_trained if self._same_engine_loaded() else None
            return self.engine_page.known_window() or loaded
        loaded = self.model_combo.currentData() == self._original.model
        if loaded and self._loaded_trained and self._same_engine_loaded():
            return self._loaded_trained
        entry = self._entry()
        if entry is not None:
            return entry.context_length
        data = self.model_combo.currentData()
        if data and data != CHOOSE_FILE:
            return catalog.file_trained_context(Path(str(data)))  # read from the file's header
        return None

    def _same_engine_loaded(self) -> bool:
        """The page's engine is the one the app has loaded (its model's numbers apply)."""
        original = self._original.engine
        if self.engine_page.uses_server() != (original.kind == "server"):
            return False
        if original.kind != "server":
            return True
        try:
            edited = EngineSettings.model_validate(self.engine_page.collect())
        except ValidationError:
            return False
        return edited.server == original.server

    def _update_model_info(self) -> None:
        data = self.model_combo.currentData()
        if data == CHOOSE_FILE:
            self.model_info.setText("Pick any GGUF model file on this computer.")
            self.effective_context_info.setText("")
            return
        entry = self._entry()
        if entry is not None:
            self.effective_context_info.setText(
                measured_line(Path(entry.file), entry.size, entry.name)
            )
            parts = [
                f"Trained context {entry.context_length:,} tokens",
                format_size(entry.size),
                f"License: {entry.license}",
            ]
            if not entry.instruction_tuned:
                parts.append(BASE_MODEL_NOTE)
            if not self._model_present(entry):
                parts.append("file not installed yet (install it in the Models window)")
            self.model_info.setText(" · ".join(parts))
        else:
            path = Path(str(data))
            size = format_size(path.stat().st_size) if path.is_file() else "file not found"
            self.effective_context_info.setText(
                measured_line(path, path.stat().st_size, str(path)) if path.is_file() else ""
            )
            ctx = self.trained_context()
            ctx_text = f"trained context {ctx:,}" if ctx else "trained context read on load"
            self.model_info.setText(f"{path} · {size} · {ctx_text}")
        self.measure_button.setVisible(
            self._speed.measure is not None and data == self._original.model)
        if hasattr(self, "effective_labels"):
            self._update_effective()

    def _measure(self) -> None:
        """Measure the model in use, through the window's service (its status bar and a
        notice follow it)."""
        if self._speed.measure is not None:
            self._speed.measure()
            self.measure_button.setEnabled(False)
            self.measure_button.setText("Measuring… (the status bar follows it)")

    def _model_activated(self, index: int) -> None:
        if self.model_combo.itemData(index) != CHOOSE_FILE:
            self._previous_model_index = index
            return
        path, _filter = QFileDialog.getOpenFileName(
            self, "Choose a GGUF model file", str(Path.home()), "GGUF models (*.gguf);;All (*)"
        )
        if path:
            self.set_model_path(path)
        else:
            self.model_combo.setCurrentIndex(self._previous_model_index)

    def set_model_path(self, path: str) -> None:
        """Select a model file by path (added to the list if new)."""
        index = self.model_combo.findData(path)
        if index < 0:
            self.model_combo.insertItem(self.model_combo.count() - 1, Path(path).name, path)
            index = self.model_combo.findData(path)
        self.model_combo.setCurrentIndex(index)
        self._previous_model_index = index

    def _browse_workspace(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Workspace folder", self.workspace.text())
        if folder:
            self.workspace.setText(folder)

    # -- effective values --------------------------------------------------------------
    def _update_effective(self) -> None:
        mode = self.selected_mode()
        values = {f: self.policy_spins[(mode, f)].value() for f, _l in POLICY_FIELDS}
        try:
            policy = ModePolicy(**values)
        except ValidationError:
            for label in self.effective_labels.values():
                label.setText("–")
            self.effective_note.setText("Fix the values above to see what is in effect.")
            return
        trained = self.trained_context()
        eff = self._candidate(mode, policy).effective_policy(trained, self._measured_for_choice())
        for field, _label in POLICY_FIELDS:
            self.effective_labels[field].setText(f"{getattr(eff, field):,}")
        if self.engine_page.uses_server():
            where = f"the server's window of {trained:,} tokens" if trained else "the server"
        else:
            where = f"a model trained on {trained:,} tokens" if trained else "this model"
        note = f"In effect for {where} ({mode} mode)."
        if eff.scaled:
            by = "server" if self.engine_page.uses_server() else "model"
            note += f" The window was capped by the {by}, so the other values were scaled."
        self.effective_note.setText(note)

    def _candidate(self, mode: str, policy: ModePolicy) -> Settings:
        """The settings as the dialog now has them, as far as the policy in force goes."""
        use = self.fields.get(("compaction", "use_measured_context"))
        compaction = self._original.compaction
        if use is not None:
            compaction = compaction.model_copy(update={"use_measured_context": field_value(use)})
        return self._original.model_copy(
            update={"mode": mode, mode: policy, "compaction": compaction})

    def _measured_for_choice(self) -> int | None:
        """The size the loaded model was measured to use well, when it is the one chosen
        (the engine builds every prompt within it: the same source as the context bar)."""
        return self._measured if self.model_combo.currentData() == self._original.model \
            else None

    # -- plumbing ----------------------------------------------------------------------
    def _connect_validation(self) -> None:
        for widget in self.fields.values():
            on_change(widget, self.validate)
        self.mode_group.buttonToggled.connect(lambda *_a: self.validate())
        self.model_combo.currentIndexChanged.connect(self.validate)
        self.engine_page.changed.connect(self.validate)


_IN_FORCE = re.compile(r"^(?P<n>\d+) threads?\b.*?\((?P<how>measured|default|set)\)")


def threads_help_text(prefill_text: str) -> str:
    """What the CPU threads setting does, with the count in force now: "0 picks
    automatically — now 2 threads (measured on this computer)." """
    match = _IN_FORCE.match(prefill_text)
    if match is None:
        return ("0 picks automatically: the CPU's cores, or the count measured on the first "
                "load of the model.")
    n = int(match.group("n"))
    how = {
        "measured": "measured on this computer",
        "default": "the CPU's cores",
        "set": "set here",
    }[match.group("how")]
    return f"0 picks automatically — now {n} thread{'s' if n != 1 else ''} ({how})."
