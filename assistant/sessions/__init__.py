"""Chat storage: append-only JSONL files, a session tree with branches, crash safety. Start
with :class:`SessionStore` and :class:`ChatHandle`; the format: docs/ARCHITECTURE.md."""

from assistant.sessions.entries import SCHEMA_VERSION, ChatHeader, Entry
from assistant.sessions.errors import (
    ChatClosedError,
    ChatCorruptError,
    ChatLoadError,
    ChatLockedError,
    ChatNotFoundError,
    ChatReadOnlyError,
    ChatVersionError,
    SessionError,
)
from assistant.sessions.handle import ChatHandle
from assistant.sessions.store import ChatSummary, SessionStore
from assistant.sessions.summary import (
    BRANCH_SUMMARY_PREFIX,
    Summarizer,
    is_branch_summary,
)

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "SCHEMA_VERSION",
    "ChatClosedError",
    "ChatCorruptError",
    "ChatHandle",
    "ChatHeader",
    "ChatLoadError",
    "ChatLockedError",
    "ChatNotFoundError",
    "ChatReadOnlyError",
    "ChatSummary",
    "ChatVersionError",
    "Entry",
    "SessionError",
    "SessionStore",
    "Summarizer",
    "is_branch_summary",
]
