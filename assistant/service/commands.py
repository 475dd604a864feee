"""The app commands (``/help``, ``/clear``, ``/model``, ``/mode``, ``/resume``, ``/export``)
as the service runs them for both faces; one that needs the face's help is an event."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.agent.commands import HELP_ROWS, HELP_TEXT, AppCommand
from assistant.agent.events import Notice
from assistant.config import MODE_NAMES, Mode
from assistant.llm.registry import load_registry
from assistant.service import chats
from assistant.service.events import ChatPickerRequested, ExportPathNeeded

if TYPE_CHECKING:
    from assistant.service.service import ChatService

#: How many chats ``/resume`` lists.
RESUME_LIST = 10


class AppCommands:
    def __init__(self, service: ChatService, extra_help: str = "") -> None:
        self.service = service
        self.extra_help = extra_help

    def handlers(self) -> dict[str, Callable[[str], None]]:
        """The handler of each app command of the table (``/compact`` is a model job)."""
        return {
            "help": self.help, "clear": self.clear, "model": self.model, "mode": self.mode,
            "resume": self.resume, "export": self.export,
        }

    def run(self, command: AppCommand) -> None:
        handler = self.handlers().get(command.name)
        if handler is None:  # pragma: no cover - /compact, a model job, is never sent here
            raise ValueError(f"/{command.name} is not an app command")
        handler(command.argument.strip())

    def help(self, _arg: str) -> None:
        text = HELP_TEXT + (f"\n\n{self.extra_help}" if self.extra_help else "")
        self.service.emit(Notice("info", text, rows=HELP_ROWS))

    def clear(self, _arg: str) -> None:
        self.service.new_chat()

    def model(self, arg: str) -> None:
        s = self.service
        if arg:
            s.apply_settings(s.settings.model_copy(update={"model": arg}))
            return
        try:
            names = ", ".join(e.name for e in load_registry().models)
        except (OSError, ValueError, KeyError):
            names = "(the registry cannot be read)"
        info = s.model.info
        current = (
            f"{info.name} (trained on {info.trained_context:,} tokens, window "
            f"{s.context_window_for(s.settings):,})"
            if info is not None
            else f"{s.settings.model} ({s.model.state})"
        )
        s.notice(
            "info",
            f"Model: {current}.\nSwitch with /model NAME or a GGUF path. Registered: {names}.",
        )

    def mode(self, arg: str) -> None:
        s = self.service
        arg = arg.lower()
        if arg in MODE_NAMES:
            s.apply_settings(s.settings.model_copy(update={"mode": Mode(arg)}))
        elif arg:
            s.notice("error", "Usage: " + " or ".join(f"/mode {name}" for name in MODE_NAMES))
            return
        trained = s.model.info.trained_context if s.model.info else None
        policy = (s.model.engine.controller.policy() if s.model.engine is not None
                  else s.settings.effective_policy(trained))
        s.notice("info", "Mode " + policy.describe())

    def resume(self, arg: str) -> None:
        s = self.service
        if arg:
            s.resume(arg)
            return
        listed = s.chat.summaries()
        lines = chats.chat_lines(listed, RESUME_LIST) or ["(none yet)"]
        s.notice("info", "Recent chats (/resume ID, /resume last, or part of a title):\n"
                 + "\n".join(lines))
        s.emit(ChatPickerRequested(tuple(listed)))

    def export(self, arg: str) -> None:
        s = self.service
        if s.chat.chat_id is None:
            s.notice("error", "Nothing to export yet: this chat is empty.")
        elif arg:
            s.chat.export(Path(arg))
        else:
            title = s.chat.handle.title if s.chat.handle is not None else "chat"
            s.emit(ExportPathNeeded(chats.suggested_export_path(title)))
