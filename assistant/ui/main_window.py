# Over 500 lines: wires each service event to a widget; menus and views are apart.
"""The main window: chat list, transcript, composer, context bar and status bar.

It sends what the user does to the session service and renders the service's events (the
:class:`ServiceBridge`'s signals); its dialogs are in :mod:`.window_dialogs` (its base class).
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QWidget,
)

from assistant.config import Mode, Settings
from assistant.service import events as sev
from assistant.service import values as ev
from assistant.service.catalog import Registry, is_installed
from assistant.service.events import ModelChanged, PrefillProgress, SettingsChanged
from assistant.service.measure import measure_effective_context
from assistant.service.model_guide import guide_text, model_guide
from assistant.service.progress import stats_text
from assistant.service.resume import forget_calibration
from assistant.service.service import ChatService
from assistant.service.status import Phase, Status
from assistant.service.view import ServiceView
from assistant.ui import theme
from assistant.ui.approval import GuiApprover
from assistant.ui.bridge import ServiceBridge
from assistant.ui.chat_input import ChatInput
from assistant.ui.chat_view import ChatView
from assistant.ui.context_bar import ContextBar
from assistant.ui.file_drop import FileDropHandler
from assistant.ui.focus_keeper import FocusKeeper
from assistant.ui.menu_bar import AppMenus
from assistant.ui.models_page import ModelsPage
from assistant.ui.notices import Banner, DamageBanner
from assistant.ui.parts import (
    new_label,
    opened,
    progress_bar,
    push_button,
    styled_button,
    vbox,
)
from assistant.ui.performance_page import SpeedHooks
from assistant.ui.progress_strips import CompactionStrip, PromptProgress
from assistant.ui.settings_dialog import SettingsDialog
from assistant.ui.sidebar import ChatEntry, Sidebar, SidebarWidth
from assistant.ui.welcome_view import WelcomeView
from assistant.ui.window_dialogs import ChatOptionsDialog, WindowDialogs
from assistant.ui.window_state import (
    fit_to_screen,
    last_chat,
    restore_window_state,
    save_window_state,
)
from assistant.ui.wrap_button import FittedButton, FittedLabel

SHORTCUTS_HELP = (
    "Shortcuts: Ctrl+N new chat · Ctrl+K search chats · Ctrl+, settings · Ctrl+M models · "
    "Ctrl+Q quit · Ctrl+Shift+E export · Ctrl+Shift+C copy chat · F2 rename · "
    "Ctrl+Shift+Enter continue · Ctrl+Shift+R regenerate · Ctrl+= / Ctrl+- / Ctrl+0 zoom · "
    "Esc stop / cancel "
    "· Up (empty input) edit your last message · Enter send · Shift+Enter new line"
)


#: The status bar while the compaction strip is shown (the strip has the words and progress).
COMPACTING_STATUS = "Esc cancels the summary"


class MainWindow(WindowDialogs):
    def __init__(
        self,
        service: ChatService,
        bridge: ServiceBridge,
        approver: GuiApprover,
        registry: Registry | None = None,
    ) -> None:
        super().__init__()
        self.service = service
        self.bridge = bridge
        self.approver = approver
        self._theme = service.settings.theme
        self.registry = registry
        self.view = ServiceView(service)
        self.editing_id: str | None = None
        #: The chat on screen (the context bar is cleared when another one is shown).
        self._shown_chat: str | None = None
        #: The last status the service reported (what the status bar shows).
        self.status = service.status_machine.status
        self.settings_dialog: SettingsDialog | None = None
        self.models_page: ModelsPage | None = None
        self.chat_options_dialog: ChatOptionsDialog | None = None
        self.setWindowTitle("Offline Assistant")
        self._refit = QTimer(self, singleShot=True, interval=300)
        self._refit.timeout.connect(self._fit_framed)
        self._shown_frame = (0, 0)
        self.resize(1180, 800)
        self._build()
        self._wire()
        # Esc is the window's own shortcut (the menus' actions carry the others).
        self.escape_shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        self.escape_shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
        self.escape_shortcut.activated.connect(self.escape)
        self.menus = AppMenus(self)
        self._apply_zoom(service.settings.zoom)
        restore_window_state(self, self.splitter)
        fit_to_screen(self)
        self._refresh_chats()
        self._reopen_last_chat()
        self._render_conversation()
        self._update_mode_label()
        self._status_changed(self.status)

    # -- construction ------------------------------------------------------------------
    def _build(self) -> None:
        self.sidebar = Sidebar()
        right = QWidget()
        right_layout = vbox(right, (0, 0, 0, 0), 0)

        self.choose_model_button = push_button(
            "Choose another model…", self._open_settings_for_the_engine
        )
        self.retry_button = push_button("Retry", self.service.load_model)
        self.model_banner = Banner("ModelBanner", self.retry_button, self.choose_model_button)
        self.model_banner_label = self.model_banner.label
        right_layout.addWidget(self.model_banner)
        self.damage_banner = DamageBanner()
        right_layout.addWidget(self.damage_banner)

        self.chat_view = ChatView()
        self.welcome = WelcomeView()
        self.welcome.set_workspace(self.service.settings.workspace_path())
        self.welcome.set_server(self._server_url(self.service.settings))
        self._show_model_guide()
        self.transcript = QStackedWidget()
        self.transcript.addWidget(self.welcome)
        self.transcript.addWidget(self.chat_view)
        right_layout.addWidget(self.transcript, 1)

        self.status_strip = CompactionStrip()
        right_layout.addWidget(self.status_strip)
        self.prompt_progress = PromptProgress()
        right_layout.addWidget(self.prompt_progress)

        composer = QFrame()
        composer.setObjectName("ComposerFrame")
        comp = self.chat_view.in_column(vbox(composer, (24, 10, 24, 10), 8))
        self.edit_banner = new_label(
            "Editing your message: Enter sends it as a new branch · Esc cancels", "MutedLabel"
        )
        self.edit_banner.setVisible(False)
        comp.addWidget(self.edit_banner)
        row = QHBoxLayout()
        row.setSpacing(8)
        self.input = ChatInput(enter_sends=self.service.settings.enter_sends)
        self.send_button = push_button("Send", self._send_clicked, name="PrimaryButton")
        self.send_button.setMinimumWidth(84)
        row.addWidget(self.input, 1)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        comp.addLayout(row)
        info = QHBoxLayout()
        info.setSpacing(12)
        self.context_bar = ContextBar()
        self.queue_label = new_label("", "MutedLabel")
        info.addWidget(self.context_bar, 1)
        info.addWidget(self.queue_label)
        comp.addLayout(info)
        right_layout.addWidget(composer)

        self.splitter = QSplitter(Qt.Orientation.Horizontal, childrenCollapsible=False,
                                  handleWidth=1)
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.sidebar_width = SidebarWidth(self, self.splitter)  # it follows the zoom
        self.setCentralWidget(self.splitter)

        status = self.statusBar()
        status.setSizeGripEnabled(False)
        self.status_label = FittedLabel("")
        status.addWidget(self.status_label, 1)
        self.load_progress = progress_bar("Loading the model", 140, 140, maximum=0)
        self.load_progress.setVisible(False)
        status.addPermanentWidget(self.load_progress)
        self.model_label = styled_button(
            FittedButton(), "", self.open_chat_options, name="StatusButton",
            tip="This chat's model and system prompt",
            accessible="Model and system prompt of this chat",
        )
        self.model_label.setFlat(True)
        status.addPermanentWidget(self.model_label)
        self.mode_label = QLabel("")
        status.addPermanentWidget(self.mode_label)

    def _wire(self) -> None:
        c = self.service
        b = self.bridge
        self.input.submitted.connect(self.submit)
        self.input.edit_last_requested.connect(self.edit_last_message)
        self.input.escape_pressed.connect(self.escape)
        self.input.draft_changed.connect(c.draft_changed)
        self.sidebar.new_chat_requested.connect(self.new_chat)
        self.sidebar.chat_selected.connect(self.open_chat)
        self.sidebar.rename_requested.connect(c.chat.rename)
        self.sidebar.delete_requested.connect(c.delete_chat)
        self.sidebar.undo_delete_requested.connect(lambda _chat_id: c.undo_delete())
        self.chat_view.edit_requested.connect(self.start_edit)
        self.chat_view.regenerate_requested.connect(c.regenerate)
        self.chat_view.delete_requested.connect(c.delete_message)
        self.chat_view.branch_step_requested.connect(c.switch_branch)
        self.chat_view.entries_changed.connect(self._update_welcome)
        self.chat_view.retry_requested.connect(lambda _id: c.answer_kept())
        self.chat_view.continue_requested.connect(lambda _id: c.continue_reply())
        self.welcome.example_chosen.connect(self.submit)
        self.welcome.open_workspace_requested.connect(self.open_workspace)
        self.welcome.change_workspace_requested.connect(self.change_workspace)
        self.setAcceptDrops(True)
        self.drop_handler = FileDropHandler(self, self.transcript)
        self.drop_handler.files_dropped.connect(self.drop_files)
        self.focus_keeper = FocusKeeper(self, self.input)
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self.drop_handler)
            app.installEventFilter(self.focus_keeper)
        self.damage_banner.repair_requested.connect(self.service.repair_chat)
        self.sidebar.options_requested.connect(self._chat_options_for)
        self.sidebar.searcher = self.view.search_chats
        self._route_events(b)

    def _route_events(self, b: ServiceBridge) -> None:
        """One route per service event type (tests/ui/test_bridge_routes.py checks them all)."""
        b.on(ev.MessageAdded, lambda event: self.chat_view.add_message(event.message))
        b.on(ev.AssistantDelta, lambda event: self.chat_view.append_delta(event.text))
        b.on(ev.ToolCallStarted, lambda event: self.chat_view.tool_call_started(event.call))
        b.on(ev.Notice, lambda notice: self.show_notice(notice.level, notice.text,
                                                        rows=notice.rows))
        b.on(ev.ContextUsage, self._context_usage)
        b.on(ev.ContextChanged, lambda event: self._context_changed(event.event))
        b.on(ev.TurnFinished, lambda event: self.chat_view.end_streaming(stopped=event.stopped))
        b.on(sev.StatusChanged, lambda event: self._status_changed(event.status))
        b.on(sev.QueueChanged, lambda _event: self._update_composer())
        b.on(sev.ChatsChanged, lambda _event: self._refresh_chats())
        b.on(sev.ConversationReset, lambda _event: self._render_conversation())
        b.on(sev.ConversationReset,
             lambda _e: self.damage_banner.show_for(self.service.chat.handle))
        b.on(sev.ModelChanged, self._model_changed)
        b.on(sev.SettingsChanged, self._settings_changed)
        b.on(sev.PrefillProgress, self._prefill_progress)
        b.on(sev.ReplyStats, lambda stats: self.chat_view.set_reply_footer(stats_text(stats)))
        b.on(sev.ModelSwitchSuggested, self._model_switch_suggested)
        b.on(ev.MessageRefused, self._message_refused)
        b.on(sev.ExportPathNeeded, lambda event: self._choose_export_path(event.suggested))
        b.on(sev.ChatPickerRequested, lambda _event: self.sidebar.focus_search())
        # Not shown in the window: the prompt's progress comes again as PrefillProgress, a
        # call's figures as ReplyStats; a restored state and the prefill settings are lines
        # for the terminal chat.
        b.ignore(ev.PromptProgress, ev.ModelCallFinished, sev.ModelStateRestored,
                 sev.PrefillTuned)

    # -- chats -------------------------------------------------------------------------
    def _refresh_chats(self) -> None:
        entries = [
            ChatEntry(s.id, s.title + _list_mark(s), s.updated)
            for s in self.service.chat.summaries()
        ]
        self.sidebar.set_chats(entries, current=self.service.chat.chat_id)

    def _render_conversation(self) -> None:
        c = self.service
        self.chat_view.branch_info = c.chat.branch_info if c.chat.handle is not None else None
        self.chat_view.branch_end = c.chat.branch_end if c.chat.handle is not None else None
        self._show_recall_focus(c.settings)
        self.chat_view.set_conversation(c.chat.shown_conversation)
        self.chat_view.set_actions_enabled(not c.jobs.busy)
        prunes, tokens = c.chat.prune_count()
        self.context_bar.set_counts(prunes, tokens, len(c.chat.conversation.compactions))
        if c.chat.handle is None or c.chat.chat_id != self._shown_chat:
            self.context_bar.set_usage(None)
        self._shown_chat = c.chat.chat_id
        self.sidebar.set_current(c.chat.chat_id)
        self._cancel_edit()
        self.menus.update()

    def _reopen_last_chat(self) -> None:
        """A restart continues where the user left off: the chat open at the last close."""
        chat_id = last_chat()
        if chat_id is not None and self.sidebar.item_for(chat_id) is not None:
            self.service.open_chat(chat_id)

    def new_chat(self) -> None:
        if self.service.new_chat():
            self.input.setFocus()

    def open_chat(self, chat_id: str) -> None:
        if self.service.open_chat(chat_id):
            self.input.setFocus()
        else:
            self.sidebar.set_current(self.service.chat.chat_id)

    def _show_model_guide(self) -> None:
        """The welcome page's list of models (the one in use first)."""
        current = self.service.settings.model
        self.welcome.set_models([guide_text(line) for line in model_guide(current)])

    def _update_welcome(self) -> None:
        """The welcome page stands in for the transcript while the chat shows nothing."""
        page = self.welcome if self.chat_view.is_empty else self.chat_view
        if self.transcript.currentWidget() is not page:
            self.transcript.setCurrentWidget(page)

    # -- sending -----------------------------------------------------------------------
    def submit(self, text: str) -> None:
        if self.editing_id is not None:
            message_id = self.editing_id
            self._cancel_edit()
            self.service.edit_message(message_id, text)
            return
        if not self.service.submit(text) and not self.input.toPlainText():
            self.input.setPlainText(text)  # refused (a notice says why): nothing is lost
        self._update_composer()

    def _message_refused(self, event: ev.MessageRefused) -> None:
        """A message too large for the window goes back into the empty input box (a refused
        edit or regeneration as an edit of that message); a notice says why."""
        if not self.input.toPlainText():
            if event.replaces is not None and event.replaces in self.chat_view.message_widgets:
                self._enter_edit(event.replaces, event.text)
            else:
                self.input.setPlainText(event.text)
        self._update_composer()

    def _send_clicked(self) -> None:
        if self.service.jobs.busy:
            self.service.stop()
            return
        self.input.submit()

    def escape(self) -> None:
        if self.input.completer.popup_visible:
            self.input.completer.hide()
            return
        if self.editing_id is not None:
            self._cancel_edit()
            self.input.clear()
            return
        self.service.stop()

    def edit_last_message(self) -> None:
        msg = self.chat_view.last_user_message()
        if msg is not None and not self.service.jobs.busy:
            self.start_edit(msg.id)

    def start_edit(self, message_id: str) -> None:
        widget = self.chat_view.message_widgets.get(message_id)
        if widget is None or self.service.jobs.busy:
            return
        self._enter_edit(message_id, widget.message.content)

    def _enter_edit(self, message_id: str, text: str) -> None:
        self.editing_id = message_id
        self.input.setPlainText(text)
        cursor = self.input.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.input.setTextCursor(cursor)
        self.edit_banner.setVisible(True)
        self.input.setFocus()

    def _cancel_edit(self) -> None:
        self.editing_id = None
        self.edit_banner.setVisible(False)

    def _update_composer(self) -> None:
        c = self.service
        busy = c.jobs.busy
        self.send_button.setText("Stop" if busy else "Send")
        self.send_button.setObjectName("StopButton" if busy else "PrimaryButton")
        self.send_button.setToolTip("Stop the reply (Esc)" if busy else "Send (Enter)")
        self.send_button.style().unpolish(self.send_button)
        self.send_button.style().polish(self.send_button)
        self.chat_view.set_actions_enabled(not busy)
        self.menus.update()
        queued = len(c.queue)
        if queued:
            waits_for = "connected" if c.settings.engine.kind == "server" else "loaded"
            why = "" if c.ready else f" (sent when the model has {waits_for})"
            self.queue_label.setText(f"{queued} message{'s' if queued > 1 else ''} queued{why}")
        else:
            self.queue_label.setText("")

    # -- agent events ------------------------------------------------------------------
    def _context_usage(self, usage: ev.ContextUsage) -> None:
        self.context_bar.set_usage(usage)
        self._update_mode_label()

    def _context_changed(self, event: ev.ContextEvent) -> None:
        if isinstance(event, ev.PruneEvent):
            self.chat_view.add_prune_notice(list(event.message_ids), event.tokens_freed)
            self.context_bar.add_prune(event.tokens_freed)
        elif isinstance(event, ev.CompactionFinished):
            self._render_conversation()
            self.chat_view.add_compaction_line(event.record)
        elif not isinstance(event, ev.CompactionStarted):  # (the status bar shows that one)
            level = "error" if isinstance(event, ev.CompactionFailed) else "info"
            self.show_notice(level, ev.context_line(event))

    def _prefill_progress(self, event: PrefillProgress) -> None:
        if self.status.phase is Phase.EVALUATING_PROMPT:
            self.prompt_progress.update_progress(event)
        elif self.status.phase is Phase.COMPACTING:  # a summary written inside the turn
            self.status_strip.update_progress(event)

    # -- status and the model ----------------------------------------------------------
    def _status_changed(self, status: Status) -> None:
        """The status bar, the compaction strip, the load progress and Send/Stop follow it
        (while the strip shows a compaction, the status bar adds only what it does not say)."""
        self.status = status
        compacting = status.phase is Phase.COMPACTING
        if status.phase is Phase.LOADING_MODEL and status.detail:  # the model's one name
            status = replace(status, detail=self._model_name(status.detail))
        self.status_label.setText(COMPACTING_STATUS if compacting else status.text)
        if compacting != self.status_strip.isVisible():
            if compacting:
                self.status_strip.start()
            else:
                self.status_strip.stop()
        if status.phase is not Phase.EVALUATING_PROMPT:
            self.prompt_progress.finish()
        loading = status.phase is Phase.LOADING_MODEL
        self.load_progress.setVisible(loading)
        if loading and status.progress is not None:
            self.load_progress.setRange(0, 100)
            self.load_progress.setValue(int(status.progress * 100))
        elif loading:
            self.load_progress.setRange(0, 0)
        self._update_composer()

    def _model_changed(self, event: ModelChanged) -> None:
        failed = bool(event.error)
        self._show_model_guide()
        self.model_banner.setVisible(failed)
        on_server = self.service.settings.engine.kind == "server"
        self.choose_model_button.setText("Server settings…" if on_server
                                         else "Choose another model…")
        if event.info is not None:
            window = self.service.context_window_for(self.service.settings)
            where = event.info.extra.get("url", "") if on_server else ""
            at = f" · {where.split('://', 1)[-1]}" if where else ""
            self.model_label.setText(f"{self._loaded_name(event.info)}{at} · {window:,} ctx")
        elif failed:
            title, short, message = (
                ("Server not available", "no server",
                 f"The server engine is not available: {event.error}\nStart the server and "
                 "press Retry, or change the address or the engine in Server settings. "
                 "What you type waits.")
                if on_server else
                ("Model not loaded", "no model",
                 f"The model could not be loaded: {event.error}\nChoose another model in "
                 "Settings, or install one in the Models window (Ctrl+M).")
            )
            self.model_banner_label.setText(message)
            self.model_label.setText(short)
            self._error_box(title, message)
        else:
            self.model_label.setText("")
        self._update_mode_label()
        self._update_composer()
        if self.models_page is not None and self.models_page.isVisible():
            self.models_page.model_changed(
                event.error, started=event.info is None and not event.error)

    def _error_box(self, title: str, text: str) -> QMessageBox:
        box = QMessageBox(
            QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self
        )
        self.error_box = opened(box)
        return box

    def _update_mode_label(self) -> None:
        policy = self.view.policy()
        self.mode_label.setText(f"{Mode(self.service.settings.mode).label} mode")
        self.mode_label.setToolTip(policy.describe())
        self.context_bar.set_policy_text(policy.describe())

    # -- settings ----------------------------------------------------------------------
    def open_settings(self) -> SettingsDialog:
        if self.settings_dialog is not None and self.settings_dialog.isVisible():
            self.settings_dialog.raise_()
            return self.settings_dialog
        c = self.service
        dialog = SettingsDialog(
            c.settings,
            self.registry,
            loaded_trained_context=c.model.info.trained_context if c.model.info else None,
            model_present=is_installed,
            count_tokens=self.view.token_counter(self._counted),  # on the model's worker
            measured_context=self.view.measured_context(),
            speed=SpeedHooks(
                state_usage=c.saved_states.cache.usage,
                # A write still under way may land after.
                clear_states=c.saved_states.cache.clear,
                forget_calibration=forget_calibration,
                prefill_text=c.prefill_text,
                measure=(lambda: measure_effective_context(c)) if c.model.engine else None,
            ),
            parent=self,
        )
        dialog.accepted.connect(lambda: self._settings_accepted(dialog))
        self.settings_dialog = dialog
        dialog.open()
        return dialog

    def _counted(self) -> None:  # a count is in: the open dialog checks its values again
        if self.settings_dialog is not None and self.settings_dialog.isVisible():
            self.settings_dialog.validate()

    def _open_settings_for_the_engine(self) -> None:
        """The banner's button: the settings at the page that can fix the failed load."""
        dialog = self.open_settings()
        if self.service.settings.engine.kind == "server":
            dialog.show_page(dialog.engine_page)

    def _settings_accepted(self, dialog: SettingsDialog) -> None:
        if (new := dialog.result_settings()) is not None:
            self.service.apply_settings(new, reconnect=dialog.engine_page.key_changed)

    def _settings_changed(self, event: SettingsChanged) -> None:
        new = event.settings
        self.input.set_enter_sends(new.enter_sends)
        app = QApplication.instance()
        if isinstance(app, QApplication) and new.theme != self._theme:
            theme.apply_theme(app, new.theme)
        self._theme = new.theme
        self._apply_zoom(new.zoom)
        self._show_recall_focus(new)
        self._update_mode_label()
        self.welcome.set_workspace(new.workspace_path())
        self.welcome.set_server(self._server_url(new))

    def _show_recall_focus(self, settings: Settings) -> None:
        """Whether a reply that brings excerpts back is written without the summary."""
        sw = settings.switches()
        self.chat_view.set_recall_focus(sw.recall and sw.earlier_as_notes and sw.recall_focus)

    def _apply_zoom(self, percent: int) -> None:
        """The whole window's text at ``percent`` (menus, sidebar, messages, code, dialogs)."""
        app = QApplication.instance()
        if isinstance(app, QApplication):
            theme.apply_zoom(app, percent)
        self.chat_view.set_zoom(percent)

    @staticmethod
    def _server_url(settings: Settings) -> str | None:
        return settings.engine.server.base_url if settings.engine.kind == "server" else None

    # -- misc --------------------------------------------------------------------------
    def shutdown(self) -> None:
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self.drop_handler)
            app.removeEventFilter(self.focus_keeper)
        if self.models_page is not None:
            self.models_page.shutdown()
        self.approver.close()
        self.bridge.close()
        self.service.shutdown()

    def closeEvent(self, event: QCloseEvent) -> None:
        save_window_state(self, self.splitter, self.service.chat.chat_id)
        self.shutdown()
        super().closeEvent(event)

    def _frame_extra(self) -> tuple[int, int]:
        frame, inner = self.frameGeometry(), self.geometry()
        return frame.width() - inner.width(), frame.height() - inner.height()

    def _fit_framed(self) -> None:
        """Fit again if the window manager has framed the window since it was shown."""
        if self._frame_extra() != self._shown_frame:
            fit_to_screen(self)

    def showEvent(self, event: object) -> None:
        super().showEvent(event)  # type: ignore[arg-type]
        fit_to_screen(self)
        self._shown_frame = self._frame_extra()
        self._refit.start()
        QTimer.singleShot(0, self.input.setFocus)


def _list_mark(summary: ev.ChatSummary) -> str:
    if summary.broken:
        return " (unreadable)"
    return " (damaged)" if summary.damaged else ""
