"""An open chat: the file, its lock, the tree and the active branch as a Conversation; each
change is written and fsynced before it happens, and branch operations update the same
``conversation`` object in place."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from assistant.conversation import CompactionRecord, Conversation, Message, new_id
from assistant.sessions.entries import (
    BranchSummaryEntry,
    ChatHeader,
    CheckoutEntry,
    CompactionEntry,
    Entry,
    MessageEntry,
    PruneEntry,
    SettingEntry,
    TitleEntry,
)
from assistant.sessions.errors import ChatClosedError, ChatReadOnlyError
from assistant.sessions.export import Snapshot
from assistant.sessions.journal import JournalWriter
from assistant.sessions.lock import ChatLock
from assistant.sessions.recall_cache import RecallCache
from assistant.sessions.recall_index import RecallIndex
from assistant.sessions.summary import Summarizer, branch_summary_message, resolve_title
from assistant.sessions.tree import ChatTree

log = logging.getLogger("assistant.sessions")


class ChatHandle:
    """One chat opened for writing. Get it from ``SessionStore.open`` or ``create``."""

    def __init__(
        self,
        *,
        path: Path,
        header: ChatHeader,
        tree: ChatTree,
        writer: JournalWriter | None,
        lock: ChatLock | None,
        summarizer: Summarizer | None,
        summary_budget: int,
        warnings: list[str] | None = None,
        on_close: Callable[[ChatHandle], None] | None = None,
        read_only: str | None = None,
        recall_path: Path | None = None,
    ) -> None:
        self.chat_id = path.name.removesuffix(".jsonl")
        self.path = path
        self.header = header
        #: Things worth telling the user about the load (e.g. a torn last line moved aside).
        self.warnings: list[str] = list(warnings or [])
        self.summarizer = summarizer
        self.summary_budget = summary_budget
        self._tree = tree
        self._writer: JournalWriter | None = writer
        self._lock = lock
        self._closed = False
        #: Why nothing can be written (damaged lines; see ``SessionStore.repair``), or None.
        self.read_only = read_only
        self._on_close = on_close
        self._mutex = threading.RLock()
        self._leaf = tree.last_id
        #: The active branch. Already subscribed to this handle.
        self.conversation = tree.build(self._leaf)
        self.conversation.subscribe(self)
        #: Where this chat's full-text index lives (None: in memory); opened on first use.
        self.recall_path = recall_path
        self._recall = RecallCache(recall_path, self._recall_messages)

    # -- ConversationObserver --------------------------------------------------------------
    def message_appended(self, message: Message) -> None:
        with self._mutex:
            copy = message.model_copy(deep=True)
            self._write(self._new(MessageEntry, id=message.id, message=copy))

    def messages_pruned(self, message_ids: list[str], tokens_freed: int) -> None:
        with self._mutex:
            self._write(
                self._new(PruneEntry, message_ids=list(message_ids), tokens_freed=tokens_freed)
            )

    def compaction_added(self, record: CompactionRecord) -> None:
        with self._mutex:
            copy = record.model_copy(deep=True)
            self._write(self._new(CompactionEntry, id=record.id, record=copy))

    # -- state -----------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def leaf_id(self) -> str | None:
        """The active position: the entry the next append will hang under."""
        return self._leaf

    @property
    def title(self) -> str:
        return resolve_title(
            self._tree.explicit_title(), self.header.title, self.conversation.messages
        )

    @property
    def settings(self) -> dict[str, JsonValue]:
        """Per-chat settings recorded with :meth:`record_setting`, newest value each."""
        return {e.name: e.value for e in self._tree.entries if isinstance(e, SettingEntry)}

    @property
    def entries(self) -> list[Entry]:
        return self._tree.entries

    def is_branch_summary(self, message_id: str) -> bool:
        return message_id in self._tree and isinstance(
            self._tree.get(message_id), BranchSummaryEntry
        )

    # -- simple entries --------------------------------------------------------------------
    def rename(self, title: str) -> None:
        title = " ".join(title.split())
        if not title:
            raise ValueError("A chat title cannot be empty")
        with self._mutex:
            self._write(self._new(TitleEntry, title=title))

    def record_setting(self, name: str, value: JsonValue) -> None:
        """Record a per-chat setting change (e.g. ``record_setting("mode", "standard")``)."""
        with self._mutex:
            self._write(self._new(SettingEntry, name=name, value=value))

    def snapshot(self) -> Snapshot:
        """The active branch as an export writes it (see :data:`.export.Snapshot`)."""
        return (self.title, self.conversation, self._tree.branch_summary_ids(self._leaf),
                self._tree.compaction_positions(self._leaf))

    # -- branches --------------------------------------------------------------------------
    def edit_user_message(self, message_id: str, new_text: str) -> Message:
        """Branch: a new user message beside ``message_id``, appended (run the model next)."""
        with self._mutex:
            self._check_writable()
            old = self._tree.message_entry(message_id)
            if old.message.role != "user":
                raise ValueError("Only a user message can be edited")
            previous = self._leaf
            self._move_to(old.parent_id, summarize=False)
            message = Message(role="user", content=new_text)
            try:
                self.conversation.append(message)
            except BaseException:
                if self._leaf == old.parent_id:  # nothing was written: undo the move
                    self._leaf = previous
                    self._reload()
                raise
            return message

    def regenerate_from(self, assistant_message_id: str) -> Conversation:
        """Trim the branch to just before that reply (recorded); the next append is its sibling."""
        with self._mutex:
            self._check_writable()
            old = self._tree.message_entry(assistant_message_id)
            if old.message.role != "assistant":
                raise ValueError("Only an assistant reply can be regenerated")
            return self.switch_to(old.parent_id, summarize=False)

    def delete_message(self, message_id: str) -> Conversation:
        """Branch: the active branch without ``message_id`` (and its tool results); the old one
        stays."""
        with self._mutex:
            self._check_writable()
            conv = self.conversation
            index = conv.index_of(message_id)
            target = conv.messages[index]
            if target.role == "tool":
                raise ValueError("A tool result is deleted with the reply whose call it answers.")
            if self.is_branch_summary(message_id):
                raise ValueError("A branch summary cannot be deleted.")
            calls = {call.id for call in target.tool_calls}
            later = [
                m.model_copy(update={"id": new_id()}, deep=True)
                for m in conv.messages[index + 1:]
                if not (m.role == "tool" and m.tool_call_id in calls)
                and not self.is_branch_summary(m.id)
            ]
            parent = self._tree.message_entry(message_id).parent_id
            self.switch_to(parent, summarize=False)
            for copy in later:
                conv.append(copy)
            return conv

    def branch_target(self, message_id: str, direction: int) -> str:
        """Where the alternative ``direction`` steps away was left (:meth:`switch_to` goes)."""
        with self._mutex:
            siblings = self._tree.siblings(message_id)
            index = siblings.index(message_id) + direction
            if not 0 <= index < len(siblings):
                raise ValueError(f"There is no branch {index + 1} of {len(siblings)}")
            return self._tree.latest_in_subtree(siblings[index])

    def conversation_at(self, leaf: str | None) -> Conversation:
        """A copy of the conversation another position would show (nothing is written)."""
        with self._mutex:
            return self._tree.build(leaf)

    def switch_to(self, entry_id: str | None, *, summarize: bool = True) -> Conversation:
        """Make ``entry_id`` the active position (recorded). With ``summarize``, the branch left is
        summarized as a ``branch_summary`` entry; if that raises, nothing changes."""
        with self._mutex:
            if entry_id is not None:
                self._tree.get(entry_id)
            if entry_id == self._leaf:
                return self.conversation
            if self.read_only is not None:  # looking at another branch writes nothing
                self._leaf = entry_id
                self._reload()
                return self.conversation
            if not self._move_to(entry_id, summarize=summarize):
                self._write(self._new(CheckoutEntry, parent_id=entry_id))
            return self.conversation

    def _move_to(self, target: str | None, *, summarize: bool) -> bool:
        """Point the leaf at ``target``; returns True if a summary entry was written there."""
        wrote = False
        if summarize and self.summarizer is not None:
            ancestor = self._tree.common_ancestor(self._leaf, target)
            after = {e.id for e in self._tree.path(self._leaf)} - {
                e.id for e in self._tree.path(ancestor)
            }
            abandoned = [
                m.model_copy(deep=True)
                for m in self.conversation.messages
                if m.id in after and not self.is_branch_summary(m.id)
            ]
            covered = [m.id for m in abandoned]
            if abandoned and not self._already_summarized(target, covered):
                text = self.summarizer(abandoned, self.summary_budget)
                self._write(
                    self._new(
                        BranchSummaryEntry, parent_id=target, summary=text, covered_ids=covered
                    )
                )
                wrote = True
        if not wrote:
            self._leaf = target
        self._reload()
        return wrote

    def _already_summarized(self, target: str | None, covered: list[str]) -> bool:
        if target is None:
            return False
        entry = self._tree.get(target)
        return isinstance(entry, BranchSummaryEntry) and entry.covered_ids == covered

    # -- recall ----------------------------------------------------------------------------
    def recall_index(self) -> RecallIndex | None:
        """The chat's full-text index, opened on first use (in memory if it cannot be
        written), checked, rebuilt from the chat file when damaged (:mod:`.recall_cache`);
        None while a rebuild is under way."""
        with self._mutex:
            if self._closed:
                raise ChatClosedError(f"Chat {self.chat_id} is closed")
        return self._recall.get()

    @property
    def recall_rebuilds(self) -> int:
        """How often the index was found damaged and rebuilt while the chat was open."""
        return self._recall.rebuilds

    def _recall_messages(self) -> list[Message]:
        """Every message of the chat file, all branches, as the index holds them."""
        with self._mutex:
            return [
                e.message if isinstance(e, MessageEntry)
                else branch_summary_message(e.id, e.summary, e.timestamp)
                for e in self._tree.entries
                if isinstance(e, MessageEntry | BranchSummaryEntry)
            ]

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        """Release the file and the lock. Further changes to the conversation will fail."""
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()
            self._recall.close()
            if self._lock is not None:
                self._lock.release()
        if self._on_close is not None:
            self._on_close(self)

    def __enter__(self) -> ChatHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------
    def _new(self, kind: type[Entry], **fields: Any) -> Entry:
        """An entry at the active position, now, with a new id (unless ``fields`` say)."""
        fields.setdefault("id", new_id())
        fields.setdefault("parent_id", self._leaf)
        fields.setdefault("timestamp", time.time())
        return kind(**fields)

    def _check_writable(self) -> None:
        if self._closed:
            raise ChatClosedError(f"Chat {self.chat_id} is closed")
        if self.read_only is not None or self._writer is None:
            raise ChatReadOnlyError(self.read_only or f"Chat {self.chat_id} is read-only")

    def _write(self, entry: Entry) -> None:
        """Validate, write+fsync, then index the entry; it becomes the active position."""
        self._check_writable()
        assert self._writer is not None
        self._tree.check(entry)
        self._writer.append(entry)
        self._tree.add(entry)
        self._leaf = entry.id

    def _reload(self) -> None:
        fresh = self._tree.build(self._leaf)
        self.conversation.messages[:] = fresh.messages
        self.conversation.compactions[:] = fresh.compactions
