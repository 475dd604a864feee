"""Asking the user before a tool changes files or runs a program.

The worker thread waits while the GUI thread shows an :class:`ApprovalDialog` without
blocking the event loop. Closing the dialog, stopping the reply or closing the window count
as Deny, so the worker is never left waiting. The agent's ``ApprovalGate`` applies the answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QWidget

from assistant.tools.approval import ApprovalDecision, ApprovalRequest
from assistant.ui.parts import help_label, new_label, push_button, vbox
from assistant.ui.theme import mono_font


@dataclass
class _Pending:
    request: ApprovalRequest
    done: threading.Event = field(default_factory=threading.Event)
    decision: ApprovalDecision = ApprovalDecision.DENY


class ApprovalDialog(QDialog):
    """ "The assistant wants to use …": Allow once / Allow for this chat / Deny."""

    decided = Signal(str)

    def __init__(self, request: ApprovalRequest, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = request
        self.decision = ApprovalDecision.DENY
        self.setObjectName("ApprovalDialog")
        self.setWindowTitle("Allow this tool call?")
        self.setModal(True)
        self.setMinimumWidth(540)
        layout = vbox(self, (18, 16, 18, 14), 10)
        title = QLabel(f"The assistant wants to use <b>{request.tool}</b>")
        title.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(title)
        layout.addWidget(help_label(
            "This tool can change files in your workspace or run a program. Check what it "
            f"will do before you allow it. Workspace: {request.workspace}"
        ))
        self.summary = new_label(request.summary, wrap=True, selectable=True)
        self.summary.setFont(mono_font())
        layout.addWidget(self.summary)
        self.preview = QPlainTextEdit(request.preview, readOnly=True)
        self.preview.setFont(mono_font())
        self.preview.setMinimumHeight(140)
        layout.addWidget(self.preview, 1)
        self.preview.setVisible(bool(request.preview))
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.deny_button = push_button("Deny", lambda: self._decide(ApprovalDecision.DENY))
        self.chat_button = push_button(
            "Allow for this chat", lambda: self._decide(ApprovalDecision.ALLOW_FOR_CHAT)
        )
        self.once_button = push_button(
            "Allow once", lambda: self._decide(ApprovalDecision.ALLOW_ONCE), name="PrimaryButton"
        )
        for button in (self.deny_button, self.chat_button, self.once_button):
            button.setAutoDefault(False)
            buttons.addWidget(button)
        self.once_button.setDefault(True)
        layout.addLayout(buttons)
        self.rejected.connect(lambda: self._emit_once(ApprovalDecision.DENY))
        self._emitted = False

    def _decide(self, decision: ApprovalDecision) -> None:
        self._emit_once(decision)
        if decision == ApprovalDecision.DENY:
            self.reject()
        else:
            self.accept()

    def _emit_once(self, decision: ApprovalDecision) -> None:
        if not self._emitted:
            self._emitted = True
            self.decision = decision
            self.decided.emit(decision.value)


class GuiApprover(QObject):
    """The agent's ``Approver``: a dialog on the GUI thread, a wait on the worker thread."""

    _ask = Signal(object)

    def __init__(self, parent_widget: Callable[[], QWidget | None] = lambda: None) -> None:
        super().__init__()
        self._parent_widget = parent_widget
        self._closed = False
        self._open: list[tuple[_Pending, ApprovalDialog]] = []
        self._ask.connect(self._show)

    # -- worker thread -----------------------------------------------------------------
    def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Block the calling (worker) thread until the user answers."""
        if threading.current_thread() is threading.main_thread():
            raise RuntimeError("request_approval must not be called on the GUI thread")
        if self._closed:
            return ApprovalDecision.DENY
        pending = _Pending(request)
        try:
            self._ask.emit(pending)
        except RuntimeError:  # deleted with the window
            return ApprovalDecision.DENY
        cancel = request.cancel
        while not pending.done.wait(0.05):
            if self._closed or (cancel is not None and cancel.cancelled):
                return ApprovalDecision.DENY
        return pending.decision

    # -- GUI thread --------------------------------------------------------------------
    def close(self) -> None:
        """Deny everything asked now or later."""
        self._closed = True
        for pending, dialog in list(self._open):
            pending.decision = ApprovalDecision.DENY
            pending.done.set()
            dialog.close()
        self._open.clear()

    @property
    def open_dialogs(self) -> list[ApprovalDialog]:
        return [dialog for _pending, dialog in self._open]

    @Slot(object)
    def _show(self, pending: _Pending) -> None:
        if self._closed:
            pending.done.set()
            return
        dialog = ApprovalDialog(pending.request, self._parent_widget())
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        entry = (pending, dialog)
        self._open.append(entry)
        cancel = pending.request.cancel

        def finish(decision: str) -> None:
            pending.decision = ApprovalDecision(decision)
            pending.done.set()
            if entry in self._open:
                self._open.remove(entry)

        dialog.decided.connect(finish)
        if cancel is not None:
            # Stop pressed while the dialog is open: close it (the worker already denied).
            timer = QTimer(dialog, interval=100)
            timer.timeout.connect(lambda: dialog.reject() if cancel.cancelled else None)
            timer.start()
        dialog.open()
