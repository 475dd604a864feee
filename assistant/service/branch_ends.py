"""Versions of a chat that end where another goes on, for the ``< >`` switcher
(docs/ARCHITECTURE.md, "The chat file")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assistant.sessions.entries import CheckoutEntry, Entry, MessageEntry
from assistant.sessions.tree import ChatTree


@dataclass(frozen=True)
class Slot:
    """The versions of what follows one message (``after``; None: the chat's start)."""

    after: str | None
    #: Message versions, in file order (the siblings a switcher steps through).
    messages: tuple[str, ...]
    #: The newest end: a position after ``after`` with no message below it, or None.
    end: str | None

    @property
    def count(self) -> int:
        return len(self.messages) + (self.end is not None)


class BranchEnds:
    """The slots of one chat's entries (all branches), computed once per state."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.size = len(entries)
        self._tree = ChatTree(entries)
        with_message_below: set[str] = set()
        for entry in reversed(entries):
            below = isinstance(entry, MessageEntry) or entry.id in with_message_below
            if below and entry.parent_id is not None:
                with_message_below.add(entry.parent_id)
        self._ends: dict[str | None, str] = {}
        for entry in entries:  # newest last: it wins
            if isinstance(entry, CheckoutEntry) and entry.id not in with_message_below:
                self._ends[self._tree.anchor(entry.id)] = entry.id

    def slot_after(self, entry_id: str | None) -> Slot:
        """The versions of what follows the position ``entry_id`` (its nearest message)."""
        after = self._tree.anchor(entry_id)
        return Slot(after, tuple(self._tree.messages_after(after)), self._ends.get(after))

    def slot_of(self, message_id: str) -> Slot:
        return self.slot_after(self._tree.get(message_id).parent_id)

    def position(self, message_id: str) -> tuple[int, int]:
        """``(index, count)``, 1-based, of a message among its slot's versions."""
        slot = self.slot_of(message_id)
        return slot.messages.index(message_id) + 1, slot.count
