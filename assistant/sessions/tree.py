"""The session tree: entries linked by ``parent_id``, and the context of any position (see
docs/ARCHITECTURE.md, "The chat file")."""

from __future__ import annotations

from collections.abc import Iterable

from assistant.conversation import CompactionRecord, Conversation, Message
from assistant.sessions.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    MessageEntry,
    PruneEntry,
    TitleEntry,
)
from assistant.sessions.summary import branch_summary_message


class ChatTree:
    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._entries: list[Entry] = []
        self._by_id: dict[str, Entry] = {}
        self._pos: dict[str, int] = {}
        #: Nearest message ancestor-or-self of each entry (None: no message above it).
        self._anchor: dict[str, str | None] = {}
        #: Message entries grouped by their nearest message ancestor, in file order.
        self._message_children: dict[str | None, list[str]] = {}
        for entry in entries:
            self.add(entry)

    # -- building ------------------------------------------------------------------------
    def check(self, entry: Entry) -> None:
        """Raise ValueError if ``entry`` cannot be appended (duplicate id, unknown parent)."""
        if entry.id in self._by_id:
            raise ValueError(f"id {entry.id!r} is already used in this chat")
        if entry.parent_id is not None and entry.parent_id not in self._by_id:
            raise ValueError(f"unknown parent {entry.parent_id!r}")

    def add(self, entry: Entry) -> None:
        self.check(entry)
        self._pos[entry.id] = len(self._entries)
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        parent_anchor = self.anchor(entry.parent_id)
        if isinstance(entry, MessageEntry):
            self._anchor[entry.id] = entry.id
            self._message_children.setdefault(parent_anchor, []).append(entry.id)
        else:
            self._anchor[entry.id] = parent_anchor

    # -- lookup --------------------------------------------------------------------------
    @property
    def entries(self) -> list[Entry]:
        return list(self._entries)

    @property
    def last_id(self) -> str | None:
        return self._entries[-1].id if self._entries else None

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, entry_id: str) -> Entry:
        try:
            return self._by_id[entry_id]
        except KeyError:
            raise KeyError(f"no entry {entry_id!r} in this chat") from None

    def message_entry(self, message_id: str) -> MessageEntry:
        entry = self.get(message_id)
        if not isinstance(entry, MessageEntry):
            raise KeyError(f"{message_id!r} is not a message of this chat")
        return entry

    def explicit_title(self) -> str | None:
        """The newest title entry's title (chat-wide, in file order)."""
        for entry in reversed(self._entries):
            if isinstance(entry, TitleEntry):
                return entry.title
        return None

    # -- structure -----------------------------------------------------------------------
    def path(self, leaf: str | None) -> list[Entry]:
        out: list[Entry] = []
        current = leaf
        while current is not None:
            entry = self.get(current)
            out.append(entry)
            current = entry.parent_id
        out.reverse()
        return out

    def is_ancestor(self, ancestor: str | None, entry_id: str | None) -> bool:
        """True when ``ancestor`` is ``entry_id`` or above it (``None`` is above all)."""
        if ancestor is None:
            return True
        limit = self._pos[ancestor]
        current = entry_id
        while current is not None and self._pos[current] >= limit:
            if current == ancestor:
                return True
            current = self._by_id[current].parent_id
        return False

    def common_ancestor(self, a: str | None, b: str | None) -> str | None:
        above_a = {e.id for e in self.path(a)}
        current = b
        while current is not None and current not in above_a:
            current = self._by_id[current].parent_id
        return current

    def anchor(self, entry_id: str | None) -> str | None:
        """The nearest message at or above ``entry_id`` (None: there is none)."""
        return None if entry_id is None else self._anchor[entry_id]

    def messages_after(self, anchor: str | None) -> list[str]:
        """The messages whose nearest message ancestor is ``anchor``, in file order."""
        return list(self._message_children.get(anchor, []))

    def siblings(self, message_id: str) -> list[str]:
        """Message ids sharing ``message_id``'s nearest message ancestor, in file order."""
        return self.messages_after(self.anchor(self.message_entry(message_id).parent_id))

    def latest_in_subtree(self, entry_id: str) -> str:
        """The newest entry at or below ``entry_id``: where its branch was left."""
        self.get(entry_id)
        for entry in reversed(self._entries):
            if self.is_ancestor(entry_id, entry.id):
                return entry.id
        return entry_id  # unreachable: entry_id is its own descendant

    # -- context -------------------------------------------------------------------------
    def build(self, leaf: str | None) -> Conversation:
        messages: list[Message] = []
        compactions: list[CompactionRecord] = []
        for entry in self.path(leaf):
            if isinstance(entry, MessageEntry):
                messages.append(entry.message.model_copy(deep=True))
            elif isinstance(entry, PruneEntry):
                wanted = set(entry.message_ids)
                for msg in messages:
                    if msg.id in wanted:
                        msg.pruned = True
            elif isinstance(entry, CompactionEntry):
                compactions.append(entry.record.model_copy(deep=True))
            elif isinstance(entry, BranchSummaryEntry):
                messages.append(branch_summary_message(entry.id, entry.summary, entry.timestamp))
        return Conversation(messages=messages, compactions=compactions)

    def branch_summary_ids(self, leaf: str | None) -> set[str]:
        """Ids of the branch-summary messages in the context at ``leaf``."""
        return {e.id for e in self.path(leaf) if isinstance(e, BranchSummaryEntry)}

    def compaction_positions(self, leaf: str | None) -> dict[str, int]:
        """For each compaction on the path to ``leaf``: how many messages preceded it."""
        out: dict[str, int] = {}
        count = 0
        for entry in self.path(leaf):
            if isinstance(entry, MessageEntry | BranchSummaryEntry):
                count += 1
            elif isinstance(entry, CompactionEntry):
                out[entry.id] = count
        return out
