"""The terminal chat's service, built the one way the terminal needs it: the model's jobs
run on the calling thread (Ctrl-C cancels them), chats are kept in the window's store, and
settings changed in the chat (options, ``/mode``) apply to this run only."""

from __future__ import annotations

from collections.abc import Callable

from assistant.config import Settings
from assistant.llm.worker import InlineExecutor, ModelWorker, default_factory
from assistant.service.events import ServiceEvent
from assistant.service.service import ChatService
from assistant.sessions.store import SessionStore
from assistant.tools.approval import Approver


def terminal_service(
    settings: Settings, approver: Approver, on_event: Callable[[ServiceEvent], None]
) -> ChatService:
    service = ChatService(
        settings,
        SessionStore(),
        ModelWorker(default_factory, InlineExecutor()),
        approver,
        on_event,
        persist_settings=None,  # options and /mode apply to this run only
    )
    # Jobs run inline here: a summary written "in the background" would hold up the next
    # line of input instead of using the time the user spends reading.
    service.compact_ahead = False
    return service
