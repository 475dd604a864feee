"""Errors the session store raises. Every message is meant to be shown to the user as is."""

from __future__ import annotations

from pathlib import Path


class SessionError(Exception):
    """Base class of session store errors."""


class ChatNotFoundError(SessionError, KeyError):
    def __init__(self, chat_id: str, where: str = "chats") -> None:
        self.chat_id = chat_id
        super().__init__(f"No chat {chat_id!r} in {where}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class ChatLockedError(SessionError):
    def __init__(self, chat_id: str, path: Path) -> None:
        self.chat_id = chat_id
        self.path = path
        super().__init__(
            f"This chat is open in another window/process (chat {chat_id}, lock {path})"
        )


class ChatLoadError(SessionError):
    """A chat file cannot be read. ``path`` is the file, ``line`` the 1-based line if known."""

    def __init__(self, path: Path, reason: str, line: int | None = None) -> None:
        self.path = path
        self.reason = reason
        self.line = line
        where = f"{path.name}, line {line}" if line is not None else path.name
        super().__init__(f"Cannot read chat {where}: {reason}")


class ChatCorruptError(ChatLoadError):
    """Not a chat file, or a damaged line that is not the last one."""


class ChatVersionError(ChatLoadError):
    """Written by a newer version of the app (a higher schema version)."""


class ChatClosedError(SessionError):
    """The chat handle was closed; nothing more can be written through it."""


class ChatReadOnlyError(SessionError, PermissionError):
    """The chat has damaged lines and is read-only; an ``OSError`` too, as a failed save."""
