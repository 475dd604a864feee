"""The session service's open chat: which one it is, what is shown of it (a branch only
looked at), its own system prompt, and the store operations on it (failures: notices)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from assistant.agent.events import Notice
from assistant.conversation import Conversation
from assistant.service import chat_options, chats
from assistant.service.branch_ends import BranchEnds
from assistant.service.chat_options import BranchView, ChatOptions
from assistant.service.events import ChatsChanged, ConversationReset, ServiceEvent
from assistant.sessions.entries import PruneEntry
from assistant.sessions.errors import SessionError
from assistant.sessions.handle import ChatHandle
from assistant.sessions.store import ChatSummary, SessionStore


class ChatSlot:
    def __init__(self, store: SessionStore, emit: Callable[[ServiceEvent], None]) -> None:
        self.store = store
        self.emit = emit
        self.handle: ChatHandle | None = None
        #: A branch shown with the ``< >`` switcher and not continued yet.
        self.view: BranchView | None = None
        #: The chat's own system prompt (None: the default), read by the worker.
        self.prompt: str | None = None
        #: Options chosen for a new chat before its file exists.
        self.pending: ChatOptions | None = None
        #: The open chat's branch ends, for the state it was computed for.
        self._ends: tuple[str, BranchEnds] | None = None
        #: Called with the open chat just before it closes (what is saved with it last).
        self.before_close: Callable[[ChatHandle], None] | None = None

    def _error(self, text: str) -> None:
        self.emit(Notice("error", text))

    # -- reading -----------------------------------------------------------------------
    @property
    def conversation(self) -> Conversation:
        return self.handle.conversation if self.handle is not None else Conversation()

    @property
    def shown_conversation(self) -> Conversation:
        """The open branch, or the one the user is looking at."""
        return self.view.conversation if self.view is not None else self.conversation

    def recorded(self, name: str) -> str | None:
        """A text setting the open chat recorded (its model, its system prompt)."""
        return chat_options.recorded(self.handle.settings, name) if self.handle else None

    @property
    def chat_id(self) -> str | None:
        return self.handle.chat_id if self.handle is not None else None

    def summaries(self) -> list[ChatSummary]:
        try:
            return self.store.list_chats()
        except (OSError, SessionError) as exc:
            self._error(f"Cannot list chats: {exc}")
            return []

    def prune_count(self) -> tuple[int, int]:
        if self.handle is None:
            return 0, 0
        prunes = [e for e in self.handle.entries if isinstance(e, PruneEntry)]
        return len(prunes), sum(e.tokens_freed for e in prunes)

    def branch_info(self, message_id: str) -> tuple[int, int]:
        """``(index, count)`` of a message among the versions of its place (:mod:`.branch_ends`)."""
        ends = self._branch_ends()
        return ends.position(message_id) if ends is not None else (1, 1)

    def branch_end(self) -> tuple[int, int, str] | None:
        """``(index, count, the newest other version's first message)`` when the shown chat ends
        where other versions go on (its last message was deleted); else None."""
        ends, handle = self._branch_ends(), self.handle
        if ends is None or handle is None:
            return None
        slot = ends.slot_after(self.view.leaf if self.view is not None else handle.leaf_id)
        if not slot.messages:
            return None
        count = len(slot.messages) + 1
        return count, count, slot.messages[-1]

    def _branch_ends(self) -> BranchEnds | None:
        handle = self.handle
        if handle is None:
            return None
        entries = handle.entries
        cached = self._ends
        if cached is None or cached[0] != handle.chat_id or cached[1].size != len(entries):
            cached = (handle.chat_id, BranchEnds(entries))
            self._ends = cached
        return cached[1]

    # -- changing ----------------------------------------------------------------------
    def close(self) -> None:
        self.view = None
        self.prompt = None
        self.pending = None
        if self.handle is not None:
            if self.before_close is not None:
                self.before_close(self.handle)
            with contextlib.suppress(OSError, SessionError):
                self.handle.close()
            self.handle = None

    def new(self) -> None:
        self.close()
        self.emit(ConversationReset(None))
        self.emit(ChatsChanged())

    def open(self, chat_id: str) -> bool:
        self.close()
        try:
            self.handle = self.store.open(chat_id)
        except (OSError, SessionError) as exc:
            self.emit(ConversationReset(None))
            self._error(str(exc))
            return False
        self.prompt = self.recorded(chat_options.SYSTEM_PROMPT)
        self.emit(ConversationReset(chat_id))
        for warning in self.handle.warnings:
            self.emit(Notice("warning", warning))
        self.emit(ChatsChanged())
        return True

    def find(self, ref: str) -> ChatSummary | None:
        found = chats.find_chat(self.summaries(), ref)
        if found is None:
            self._error(f"No chat matches “{ref}”.")
        return found

    def ensure(self, system_prompt: str) -> Conversation | None:
        """The open chat's conversation, creating its file first (recording ``system_prompt``)."""
        if self.handle is None:
            prompt = self.pending.system_prompt if self.pending is not None else system_prompt
            try:
                handle = self.store.create()
            except (OSError, SessionError) as exc:
                self._error(f"Cannot create a chat: {exc}")
                return None
            self.handle, self.pending, self.prompt = handle, None, prompt
            with contextlib.suppress(OSError, SessionError):
                handle.record_setting(chat_options.SYSTEM_PROMPT, prompt)
            self.emit(ChatsChanged())
        return self.handle.conversation

    def browse(self, message_id: str, step: int) -> bool | None:
        """Show the alternative ``step`` away without moving the chat; True: another branch is
        shown, False: the chat's own, None: not possible."""
        handle = self.handle
        if handle is None:
            return None
        try:
            target = self._target(handle, message_id, step)
            shown = handle.conversation_at(target)
        except (KeyError, ValueError, SessionError) as exc:
            self._error(f"Cannot show that branch: {exc}")
            return None
        own = [m.id for m in handle.conversation.messages]
        same = target == handle.leaf_id or [m.id for m in shown.messages] == own
        self.view = None if same else BranchView(target, shown)
        self.emit(ConversationReset(handle.chat_id))
        return not same

    def _target(self, handle: ChatHandle, message_id: str, step: int) -> str:
        """Where stepping ``step`` from ``message_id`` lands (see :mod:`.branch_ends`)."""
        ends = self._branch_ends()
        if ends is not None and step:
            slot = ends.slot_of(message_id)
            at_end = slot.messages.index(message_id) + step == len(slot.messages)
            if slot.end is not None and at_end:
                return slot.end
        return handle.branch_target(message_id, step)

    def rename(self, chat_id: str, title: str) -> None:
        try:
            self.store.rename(chat_id, title)  # through the open handle when it is open
        except (OSError, SessionError, ValueError) as exc:
            self._error(f"Cannot rename the chat: {exc}")
        self.emit(ChatsChanged())

    def delete(self, chat_id: str) -> None:
        if chat_id == self.chat_id:
            self.close()
            self.emit(ConversationReset(None))
        try:
            self.store.delete(chat_id)
        except (OSError, SessionError) as exc:
            self._error(f"Cannot delete the chat: {exc}")
        self.emit(ChatsChanged())

    def undo_delete(self) -> str | None:
        try:
            chat_id = self.store.undo_delete()
        except (OSError, SessionError) as exc:
            self._error(f"Cannot restore the chat: {exc}")
            return None
        self.emit(ChatsChanged())
        return chat_id

    def export(self, target: Path) -> Path | None:
        """Write the chat to ``target`` (``.json``: OpenAI JSON, else Markdown)."""
        if self.chat_id is None:
            self._error("Nothing to export yet: this chat is empty.")
            return None
        path = target.expanduser()
        try:
            self.store.export_to_file(self.chat_id, path)
        except (OSError, SessionError) as exc:
            self._error(f"Export failed: {exc}")
            return None
        self.emit(Notice("info", f"Exported this chat to {path}"))
        return path
