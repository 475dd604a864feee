"""The chat store: one JSONL file per chat in ``paths.sessions_dir()``; a chat that cannot be
read is listed with ``error`` set. Beside them: ``<id>.jsonl.corrupt`` (torn last lines),
``trash/``, ``.locks/`` (one writer per chat) and ``.recall/`` (rebuildable indexes)."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from assistant import paths
from assistant.atomicfile import make_dirs, replace_durably, write_atomically
from assistant.conversation import new_id
from assistant.sessions.entries import SCHEMA_VERSION, ChatHeader
from assistant.sessions.errors import (
    ChatLoadError,
    ChatLockedError,
    ChatNotFoundError,
    SessionError,
)
from assistant.sessions.export import Snapshot, to_markdown, to_openai_export
from assistant.sessions.handle import ChatHandle
from assistant.sessions.journal import JournalWriter, create_chat_file, move_torn_tail_aside
from assistant.sessions.lock import ChatLock
from assistant.sessions.reader import ChatFile, read_chat_file
from assistant.sessions.recall_index import remove_index
from assistant.sessions.repair import repaired_copy
from assistant.sessions.summary import DEFAULT_SUMMARY_BUDGET, Summarizer, resolve_title
from assistant.sessions.tree import ChatTree

_CHAT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

def read_only_note(chat_id: str) -> str:
    """Why a damaged chat is read-only and how to go on (window and terminal)."""
    return (
        "This chat has damaged lines, so it is open read-only: everything that could be read "
        "is shown, and nothing new is saved to it. Repair it to continue in a repaired copy "
        f"(Repair in the window, or `python -m assistant repair {chat_id}` in a terminal); "
        "the original file stays as it is."
    )


@dataclass(frozen=True)
class ChatSummary:
    """One row of the chat list (``error``: unreadable, the rest best effort)."""

    id: str
    title: str
    created: float
    updated: float
    message_count: int
    path: Path
    error: str | None = None
    warnings: tuple[str, ...] = ()
    #: Some lines cannot be read: the chat opens read-only and can be repaired.
    damaged: bool = False

    @property
    def broken(self) -> bool:
        return self.error is not None


class SessionStore:
    def __init__(
        self,
        root: Path | None = None,
        *,
        summarizer: Summarizer | None = None,
        summary_budget: int = DEFAULT_SUMMARY_BUDGET,
    ) -> None:
        self.root = root if root is not None else paths.sessions_dir()
        self.trash_dir = self.root / "trash"
        self.lock_dir = self.root / ".locks"
        #: Summarizes abandoned branches. The session service gives it compaction's branch
        #: summarizer (with the loaded model's tokenizer); without one, leaving a branch
        #: attaches no summary (storage sits below compaction and never imports it).
        self.summarizer: Summarizer | None = summarizer
        self.summary_budget = summary_budget
        self._open: dict[str, ChatHandle] = {}
        self._deleted: list[str] = []

    # -- paths -----------------------------------------------------------------------------
    def path_of(self, chat_id: str) -> Path:
        if not _CHAT_ID.fullmatch(chat_id):
            raise ChatNotFoundError(chat_id)
        return self.root / f"{chat_id}.jsonl"

    def _existing(self, chat_id: str) -> Path:
        path = self.path_of(chat_id)
        if not path.is_file():
            raise ChatNotFoundError(chat_id)
        return path

    def recall_path(self, chat_id: str) -> Path:
        """Where the chat's full-text index lives (see :mod:`.recall_index`)."""
        return self.root / ".recall" / f"{chat_id}.sqlite"

    def _lock(self, chat_id: str) -> ChatLock:
        return ChatLock(self.lock_dir / f"{chat_id}.lock", chat_id)

    # -- create / open ---------------------------------------------------------------------
    def create(self, title: str | None = None) -> ChatHandle:
        make_dirs(self.root)
        chat_id = new_id()
        header = ChatHeader(
            schema_version=SCHEMA_VERSION,
            chat_id=chat_id,
            created=time.time(),
            title=" ".join((title or "").split()) or None,
        )
        create_chat_file(self.path_of(chat_id), header)
        return self.open(chat_id)

    def open(self, chat_id: str) -> ChatHandle:
        """Open a chat for writing (read-only with damaged lines; a torn last line moved to
        ``<id>.jsonl.corrupt`` and reported in ``handle.warnings``)."""
        path = self._existing(chat_id)
        lock = self._lock(chat_id)
        lock.acquire()
        try:
            chat = read_chat_file(path)
            if chat.needs_repair:
                lock.release()  # nothing will be written: others may read it too
                return self._open_read_only(chat_id, chat)
            warnings = list(chat.warnings)
            if chat.torn is not None:
                aside = move_torn_tail_aside(path, chat.torn)
                warnings.append(
                    f"The last line of this chat was incomplete (the app stopped while "
                    f"writing it): {len(chat.torn.data)} bytes from line {chat.torn.line} "
                    f"were moved to {aside}. Everything before it was kept."
                )
            writer = JournalWriter(path)
            if chat.needs_newline:
                writer.ensure_newline()
            return self._handle(chat_id, chat, writer, lock, warnings)
        except BaseException:
            lock.release()
            raise

    def _open_read_only(self, chat_id: str, chat: ChatFile) -> ChatHandle:
        """A chat with damaged lines: every readable entry, nothing written (no lock)."""
        note = read_only_note(chat_id)
        handle = self._handle(
            chat_id, chat, None, None, [*chat.warnings, chat.damage_summary(), note], note
        )
        if chat.active is not None:
            handle.switch_to(chat.active)  # read-only: moves the view, writes nothing
        return handle

    def _handle(
        self, chat_id: str, chat: ChatFile, writer: JournalWriter | None, lock: ChatLock | None,
        warnings: list[str], read_only: str | None = None,
    ) -> ChatHandle:
        handle = ChatHandle(
            path=chat.path, header=chat.header, tree=ChatTree(chat.entries), writer=writer,
            lock=lock, summarizer=self.summarizer, summary_budget=self.summary_budget,
            warnings=warnings, on_close=self._forget, read_only=read_only,
            recall_path=self.recall_path(chat_id),
        )
        self._open[chat_id] = handle
        return handle

    def repair(self, chat_id: str) -> str:
        """Write a repaired copy of a damaged chat beside it; returns the copy's id."""
        path = self._existing(chat_id)
        chat = read_chat_file(path)
        if not chat.needs_repair:
            raise SessionError(f"Chat {chat_id} has no damaged lines; there is nothing to repair.")
        copy_id = new_id()
        data = repaired_copy(chat, copy_id)
        target = self.path_of(copy_id)
        if target.exists():  # pragma: no cover - a fresh random id
            raise SessionError(f"Cannot write the repaired copy: {target} already exists")
        write_atomically(target, data)
        return copy_id

    def _forget(self, handle: ChatHandle) -> None:
        if self._open.get(handle.chat_id) is handle:
            del self._open[handle.chat_id]

    # -- list ------------------------------------------------------------------------------
    def list_chats(self) -> list[ChatSummary]:
        """Every chat, newest first. Unreadable chats are included with ``error`` set."""
        if not self.root.is_dir():
            return []
        rows = [self._summarize_safely(p) for p in self.root.glob("*.jsonl") if p.is_file()]
        rows.sort(key=lambda r: (r.updated, r.created), reverse=True)
        return rows

    def _summarize_safely(self, path: Path) -> ChatSummary:
        """One row; whatever is wrong with one file never breaks the whole list."""
        try:
            return self._summarize(path)
        except Exception as exc:  # a bug or an odd file must not hide the other chats
            chat_id = path.name.removesuffix(".jsonl")
            reason = f"Cannot read chat {path.name}: {type(exc).__name__}: {exc}"[:500]
            return ChatSummary(chat_id, chat_id, 0.0, 0.0, 0, path, error=reason)

    def _summarize(self, path: Path) -> ChatSummary:
        chat_id = path.name.removesuffix(".jsonl")
        try:
            chat = read_chat_file(path)
        except ChatLoadError as exc:
            try:
                mtime = path.stat().st_mtime
            except OSError:
                mtime = 0.0
            return ChatSummary(chat_id, chat_id, mtime, mtime, 0, path, error=str(exc))
        tree = ChatTree(chat.entries)
        conv = tree.build(chat.leaf)
        warnings = list(chat.warnings)
        if chat.needs_repair:
            warnings.append(chat.damage_summary())
        if chat.torn is not None:
            warnings.append(
                f"Line {chat.torn.line} is incomplete; it will be moved aside when the chat "
                "is opened."
            )
        title = resolve_title(tree.explicit_title(), chat.header.title, conv.messages)
        updated = chat.entries[-1].timestamp if chat.entries else chat.header.created
        return ChatSummary(
            chat_id, title, chat.header.created, updated, len(conv.messages), path,
            warnings=tuple(warnings), damaged=chat.needs_repair,
        )

    # -- rename / delete / restore ---------------------------------------------------------
    def rename(self, chat_id: str, title: str) -> None:
        """Rename (an entry is appended). Works whether or not this store has it open."""
        handle = self._open.get(chat_id)
        if handle is not None:
            handle.rename(title)
            return
        with self.open(chat_id) as handle:
            handle.rename(title)

    def delete(self, chat_id: str) -> None:
        """Move a chat to the trash (refused while it is open anywhere)."""
        path = self._existing(chat_id)
        if chat_id in self._open:
            raise ChatLockedError(chat_id, self._lock(chat_id).path)
        with self._lock(chat_id):
            make_dirs(self.trash_dir)
            _move(path, self.trash_dir / path.name)
            sidecar = path.with_name(path.name + ".corrupt")
            if sidecar.exists():
                _move(sidecar, self.trash_dir / sidecar.name)
            remove_index(self.recall_path(chat_id))  # rebuilt if the chat is restored
        self._deleted.append(chat_id)

    def undo_delete(self) -> str | None:
        """Restore the chat this store deleted last; returns its id (None if none)."""
        while self._deleted:
            chat_id = self._deleted.pop()
            if (self.trash_dir / f"{chat_id}.jsonl").exists():
                self.restore(chat_id)
                return chat_id
        return None

    def restore(self, chat_id: str) -> None:
        self.path_of(chat_id)  # validates the id
        src = self.trash_dir / f"{chat_id}.jsonl"
        if not src.is_file():
            raise ChatNotFoundError(chat_id, "the trash")
        _move(src, self.root / src.name)
        sidecar = self.trash_dir / f"{src.name}.corrupt"
        if sidecar.exists():
            _move(sidecar, self.root / sidecar.name)
        if chat_id in self._deleted:
            self._deleted.remove(chat_id)

    # -- export -------------------------------------------------------------------------
    def _snapshot(self, chat_id: str) -> Snapshot:
        """The chat's active branch: the open handle's, else read from the file (no lock)."""
        handle = self._open.get(chat_id)
        if handle is not None:
            return handle.snapshot()
        chat = read_chat_file(self._existing(chat_id))
        tree = ChatTree(chat.entries)
        leaf = chat.leaf
        conv = tree.build(leaf)
        title = resolve_title(tree.explicit_title(), chat.header.title, conv.messages)
        return title, conv, tree.branch_summary_ids(leaf), tree.compaction_positions(leaf)

    def export_markdown(self, chat_id: str) -> str:
        """The chat's active branch as Markdown."""
        title, conv, summaries, _ = self._snapshot(chat_id)
        return to_markdown(conv, title, branch_summary_ids=summaries)

    def export_openai_json(self, chat_id: str) -> str:
        """The chat's active branch as OpenAI-format JSON text (see ``sessions.export``)."""
        title, conv, summaries, after = self._snapshot(chat_id)
        doc = to_openai_export(conv, title, branch_summary_ids=summaries, compaction_after=after)
        return json.dumps(doc, ensure_ascii=False, indent=2)

    def export_to_file(self, chat_id: str, path: Path) -> Path:
        """Write the chat to ``path`` (``.json``: OpenAI JSON, else Markdown) through a temporary
        file, so a failed export leaves the old file; returns the path."""
        as_json = path.suffix.lower() == ".json"
        text = self.export_openai_json(chat_id) if as_json else self.export_markdown(chat_id)
        return write_atomically(path, text)

    def close_all(self) -> None:
        for handle in list(self._open.values()):
            handle.close()


def _move(src: Path, dest: Path) -> None:
    if dest.exists():
        raise SessionError(f"Cannot move {src.name}: {dest} already exists")
    replace_durably(src, dest)
