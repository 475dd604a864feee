"""The repaired copy of a chat with damaged lines: every readable entry under a new id,
titled "<title> (repaired)", with a checkout when the active position is earlier."""

from __future__ import annotations

import time

from assistant.conversation import new_id
from assistant.sessions.entries import (
    SCHEMA_VERSION,
    ChatHeader,
    CheckoutEntry,
    TitleEntry,
    encode_line,
)
from assistant.sessions.reader import ChatFile
from assistant.sessions.summary import resolve_title
from assistant.sessions.tree import ChatTree

REPAIRED_SUFFIX = " (repaired)"


def repaired_copy(chat: ChatFile, copy_id: str) -> bytes:
    """The new file's content: a header for ``copy_id``, the readable entries, a title."""
    tree = ChatTree(chat.entries)
    conv = tree.build(chat.leaf)
    title = resolve_title(tree.explicit_title(), chat.header.title, conv.messages)
    header = ChatHeader(schema_version=SCHEMA_VERSION, chat_id=copy_id,
                        created=chat.header.created, title=chat.header.title)
    moved: list[CheckoutEntry] = []
    if chat.leaf != tree.last_id:  # the active position is an earlier entry: go back there
        moved.append(CheckoutEntry(id=new_id(), parent_id=chat.leaf, timestamp=time.time()))
    renamed = TitleEntry(id=new_id(), parent_id=moved[0].id if moved else tree.last_id,
                         timestamp=time.time(),
                         title=title.removesuffix(REPAIRED_SUFFIX) + REPAIRED_SUFFIX)
    items = (header, *chat.entries, *moved, renamed)
    return b"".join(encode_line(item) for item in items)
