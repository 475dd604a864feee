"""The settings dialog's Speed tab: saved chat states, chunk reuse, prompt batch sizes.

It edits :class:`~assistant.config.Performance` (and shows the prompt settings in force).
The space the saved states take is shown with a button that deletes them all; another
forgets the measured prompt settings so the next model load measures them again. Both act
at once (they do not wait for Save), through callables the window passes in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QScrollArea,
    QSpinBox,
    QWidget,
)

from assistant.config import Performance
from assistant.llm.kv_state import Usage
from assistant.ui.boxes import vbox
from assistant.ui.buttons import push_button
from assistant.ui.form_parts import (
    Field,
    field_value,
    format_size,
    help_label,
    new_label,
    set_field,
    spin_box,
)


@dataclass(frozen=True)
class SpeedHooks:
    """What the Speed tab reads and does at once, from the window (None: not available):
    the saved states' usage, deleting them (returns what was freed), forgetting the measured
    prompt settings; and the prompt settings in force (``prefill_text``)."""

    state_usage: Callable[[], Usage] | None = None
    clear_states: Callable[[], Usage] | None = None
    forget_calibration: Callable[[], None] | None = None
    prefill_text: str = ""


def _spin(maximum: int, suffix: str = "", special: str = "") -> QSpinBox:
    return spin_box(0, maximum, suffix, special, width=110)


def describe_usage(usage: Usage) -> str:
    if not usage.files:
        return "No saved chat states."
    plural = "s" if usage.files != 1 else ""
    return f"{format_size(usage.bytes)} used by {usage.files} saved chat state{plural}."


def _form(box: QGroupBox) -> QFormLayout:
    form = QFormLayout(box)
    form.setVerticalSpacing(8)
    form.setHorizontalSpacing(16)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
    return form


class PerformancePage(QScrollArea):
    def __init__(self, hooks: SpeedHooks, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._usage = hooks.state_usage
        self._clear = hooks.clear_states
        self._forget = hooks.forget_calibration
        prefill_text = hooks.prefill_text
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        inner = QWidget()
        self.setWidget(inner)
        outer = vbox(inner, (16, 12, 16, 12), 10)

        resume = QGroupBox("Instant resume")
        form = _form(resume)
        self.resume_state = QCheckBox("Save each chat's model state after a reply")
        form.addRow(self.resume_state)
        self.state_cache_mb = _spin(1_048_576, " MB", "none")
        self.state_cache_mb.setObjectName("state_cache_mb")
        form.addRow("Space for saved states", self.state_cache_mb)
        row = QHBoxLayout()
        self.usage_label = new_label("", "MutedLabel")
        row.addWidget(self.usage_label, 1)
        self.clear_button = push_button("Delete saved states", self._clear_states)
        self.clear_button.setEnabled(self._clear is not None)
        row.addWidget(self.clear_button)
        form.addRow(row)
        form.addRow(help_label(
            "A reopened chat then evaluates only what is new. States live in the cache "
            "folder, not in the chat file; the least recently used go first."
        ))
        outer.addWidget(resume)

        reuse = QGroupBox("After pruning and compaction")
        rform = _form(reuse)
        self.chunk_reuse = QCheckBox("Keep the cached text after a changed part (approximate)")
        rform.addRow(self.chunk_reuse)
        self.chunk_reuse_min = _spin(100_000, " tokens")
        self.chunk_reuse_min.setMinimum(8)
        rform.addRow("Shortest run kept", self.chunk_reuse_min)
        self.server_chunk_reuse_min = _spin(100_000, " tokens")
        self.server_chunk_reuse_min.setMinimum(8)
        rform.addRow("Shortest run kept (llama-server)", self.server_chunk_reuse_min)
        rform.addRow(help_label(
            "On by default: moves the text after a cleared output or a summary instead of "
            "evaluating it again. Faster, but approximate: the model's next token matched a "
            "full evaluation in 97% of measured positions (docs/PERFORMANCE.md). Not used "
            "with sliding-window or recurrent models."
        ))
        outer.addWidget(reuse)

        speed = QGroupBox("Prompt evaluation")
        sform = _form(speed)
        self.n_batch = _spin(65_536, "", "measured")
        self.n_batch.setObjectName("n_batch")
        sform.addRow("Tokens per call (n_batch)", self.n_batch)
        self.n_ubatch = _spin(65_536, "", "measured")
        self.n_ubatch.setObjectName("n_ubatch")
        sform.addRow("Tokens per step (n_ubatch)", self.n_ubatch)
        self.prompt_lookup = QComboBox()
        self.prompt_lookup.addItems(["auto", "on", "off"])
        sform.addRow("Speculative decoding (prompt lookup)", self.prompt_lookup)
        self.prompt_form = QComboBox()
        self.prompt_form.addItems(["auto", "chat", "transcript"])
        sform.addRow("Prompt form (chat template or transcript)", self.prompt_form)
        self.prefill_label = help_label(
            f"In force: {prefill_text}" if prefill_text
            else "Measured when a model is loaded for the first time."
        )
        sform.addRow(self.prefill_label)
        measure_row = QHBoxLayout()
        measure_row.addWidget(help_label(
            "Threads (Model tab) and these sizes are measured on a model's first load; a "
            "value here overrides the measurement."
        ), 1)
        self.measure_button = push_button("Measure again", self._forget_calibration)
        self.measure_button.setEnabled(self._forget is not None)
        measure_row.addWidget(self.measure_button)
        sform.addRow(measure_row)
        outer.addWidget(speed)
        outer.addStretch(1)
        #: Each input by its :class:`Performance` field (the attribute of the same name).
        self.fields: dict[str, Field] = {
            name: getattr(self, name) for name in Performance.model_fields
        }
        for name in ("resume_state", "chunk_reuse", "server_chunk_reuse_min", "prompt_lookup",
                     "prompt_form"):
            self.fields[name].setToolTip(Performance.model_fields[name].description or "")
        self.refresh_usage()

    # -- values ------------------------------------------------------------------------
    def load(self, perf: Performance) -> None:
        for name, widget in self.fields.items():
            set_field(widget, getattr(perf, name))

    def values(self) -> dict[str, Any]:
        return {name: field_value(widget) for name, widget in self.fields.items()}

    def widget_for(self, field: str) -> QWidget | None:
        return self.fields.get(field)

    # -- actions -----------------------------------------------------------------------
    def refresh_usage(self) -> None:
        if self._usage is None:
            self.usage_label.setText("")
            return
        usage = self._usage()
        self.usage_label.setText(describe_usage(usage))
        self.clear_button.setEnabled(self._clear is not None and usage.files > 0)

    def _clear_states(self) -> None:
        if self._clear is None:
            return
        freed = self._clear()
        self.refresh_usage()
        plural = "s" if freed.files != 1 else ""
        self.usage_label.setText(
            f"Deleted {freed.files} saved chat state{plural} ({format_size(freed.bytes)})."
        )

    def _forget_calibration(self) -> None:
        if self._forget is None:
            return
        self._forget()
        self.measure_button.setEnabled(False)
        self.prefill_label.setText(
            "The prompt settings will be measured again on the next model load."
        )
