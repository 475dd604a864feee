"""The settings dialog's Speed tab: saved chat states, chunk reuse, prompt batch sizes.

It edits :class:`~assistant.config.Performance` (and shows the prompt settings in force).
The space the saved states take is shown with a button that deletes them all; another
forgets the measured prompt settings so the next model load measures them again. Both act
at once (they do not wait for Save), through callables the window passes in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from assistant.config import Performance
from assistant.service.values import Usage
from assistant.ui.parts import (
    Field,
    form_layout,
    format_size,
    help_label,
    new_label,
    push_button,
    spin_box,
    vbox,
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
    #: Start measuring how much of its window the loaded model uses well (Model tab).
    measure: Callable[[], object] | None = None


def describe_usage(usage: Usage) -> str:
    if not usage.files:
        return "No saved chat states."
    plural = "s" if usage.files != 1 else ""
    return f"{format_size(usage.bytes)} used by {usage.files} saved chat state{plural}."


def _group(outer: QVBoxLayout, title: str) -> QFormLayout:
    box = QGroupBox(title)
    outer.addWidget(box)
    return form_layout(box, (8, 16), fixed=True)


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

        form = _group(outer, "Instant resume")
        self.resume_state = QCheckBox("Save each chat's model state after a reply")
        form.addRow(self.resume_state)
        self.state_cache_mb = spin_box(0, 1_048_576, " MB", "none", width=110)
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

        form = _group(outer, "After pruning and compaction")
        self.chunk_reuse = QCheckBox("Keep the cached text after a changed part (approximate)")
        form.addRow(self.chunk_reuse)
        self.chunk_reuse_min = spin_box(8, 100_000, " tokens", width=110)
        form.addRow("Shortest run kept", self.chunk_reuse_min)
        self.server_chunk_reuse_min = spin_box(8, 100_000, " tokens", width=110)
        form.addRow("Shortest run kept (llama-server)", self.server_chunk_reuse_min)
        form.addRow(help_label(
            "On by default: moves the text after a cleared output or a summary instead of "
            "evaluating it again. Faster, but approximate: the model's next token matched a "
            "full evaluation in 97% of measured positions (docs/PERFORMANCE.md). Not used "
            "with sliding-window or recurrent models."
        ))

        form = _group(outer, "Prompt evaluation")
        self.n_batch = spin_box(0, 65_536, "", "measured", width=110)
        form.addRow("Tokens per call (n_batch)", self.n_batch)
        self.n_ubatch = spin_box(0, 65_536, "", "measured", width=110)
        form.addRow("Tokens per step (n_ubatch)", self.n_ubatch)
        self.prompt_lookup = QComboBox()
        self.prompt_lookup.addItems(["auto", "on", "off"])
        form.addRow("Speculative decoding (prompt lookup)", self.prompt_lookup)
        self.draft_model = QLineEdit()
        self.draft_model.setPlaceholderText("auto, off, or a model name or GGUF file")
        form.addRow("Draft model (speculative decoding)", self.draft_model)
        self.prompt_form = QComboBox()
        self.prompt_form.addItems(["auto", "chat", "transcript"])
        form.addRow("Prompt form (chat template or transcript)", self.prompt_form)
        self.prefill_label = help_label(
            f"In force: {prefill_text}" if prefill_text
            else "Measured when a model is loaded for the first time."
        )
        form.addRow(self.prefill_label)
        measure_row = QHBoxLayout()
        measure_row.addWidget(help_label(
            "Threads (Model tab) and these sizes are measured on a model's first load; a "
            "value here overrides the measurement."
        ), 1)
        self.measure_button = push_button("Measure again", self._forget_calibration)
        self.measure_button.setEnabled(self._forget is not None)
        measure_row.addWidget(self.measure_button)
        form.addRow(measure_row)
        outer.addStretch(1)
        #: Each input by its :class:`Performance` field (the attribute of the same name).
        self.fields: dict[str, Field] = {
            name: getattr(self, name) for name in Performance.model_fields
        }
        for name in ("resume_state", "chunk_reuse", "server_chunk_reuse_min", "prompt_lookup",
                     "draft_model", "prompt_form"):
            self.fields[name].setToolTip(Performance.model_fields[name].description or "")
        self.refresh_usage()

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
