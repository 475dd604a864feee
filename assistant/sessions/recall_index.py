"""A chat's full-text index (SQLite FTS5) of every message and tool output in small passages:
a cache beside the chat file, synced incrementally, checked when opened and rebuilt when
out of step, so recall can bring back what the model no longer sees (docs/RECALL.md).

Damage found while the chat is open (the file removed, truncated or overwritten, a passage
that is not the chat's text: :meth:`RecallIndex.distrust`) closes the index and calls its
``on_damage``, which rebuilds it (:mod:`.recall_cache`); a lock another process holds is not
waited for (:class:`IndexBusy` at once)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from assistant.conversation import Conversation, Message, ToolCall
from assistant.sessions.recall_text import split_passages
from assistant.textsafe import clean_text

log = logging.getLogger("assistant.sessions.recall")
T = TypeVar("T")

#: "2": tool calls are indexed (role ``call``), and a tool output's passages carry their
#: call (``source``); "3": a passage's line numbers leave out blank lines at its edges, and
#: the source names what a common command's output is about (:data:`COMMAND_WORDS`). An
#: index of an older schema is rebuilt from the chat file.
SCHEMA_VERSION = "3"
#: Arguments naming what a call acts on, in the order looked for (its header line).
TARGET_KEYS = ("path", "file_path", "command", "pattern", "query", "url")
PATH_KEYS = frozenset({"path", "file_path"})
#: bm25 weight of an assistant reply's passages (bm25 is negative: smaller ranks first).
ASSISTANT_WEIGHT = 0.6

#: One passage as stored: text, source, message id, role, first and last line.
Row = tuple[str, str, str, str, int, int]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS indexed(message_id TEXT PRIMARY KEY, seq INTEGER NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(text, source, message_id UNINDEXED, "
    "role UNINDEXED, first UNINDEXED, last UNINDEXED, tokenize='porter unicode61')",
)


@dataclass(frozen=True)
class Hit:
    """One passage found: which message, which lines, its text and bm25 rank (lower first)."""

    message_id: str
    role: str
    first: int
    last: int
    text: str
    rank: float
    #: The call a tool output's passage came from ("read_file data/part_04.txt"), "" else.
    source: str = ""


class IndexUnavailable(Exception):
    """The index cannot be used now (the reason); recall is skipped for this question."""


class IndexDamaged(IndexUnavailable):
    """The index file cannot be used as it is (the reason); it is rebuilt."""


class IndexBusy(IndexUnavailable):
    """Another process holds a lock on the index file; it is not waited for."""


def _busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _query_error(exc: sqlite3.Error) -> bool:
    """An FTS5 expression it cannot parse: the question's fault, not the file's."""
    text = str(exc).lower()
    return text.startswith("fts5:") or "unterminated string" in text


def _identity(path: Path | None) -> tuple[int, int, int, int] | None:
    """Which file ``path`` is and how it was last written (device, inode, size, change
    time); None when there is none."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class RecallIndex:
    """One chat's index; one connection behind a lock (the worker searches, the owner closes)."""

    def __init__(
        self, path: Path | None = None, on_damage: Callable[[str], None] | None = None
    ) -> None:
        self.path = path
        self.on_damage = on_damage
        #: Why the index can no longer be used (None: it can).
        self.damaged: str | None = None
        self._lock = threading.RLock()
        self._ids: set[str] = set()
        self._seq = 0
        self._conn = self._connect()
        self._identity = _identity(path)
        self._passages = int(self._conn.execute("SELECT count(*) FROM passages").fetchone()[0])
        #: How the last open went ("opened", "created", "rebuilt: <reason>").
        self.state = "created"

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(
        cls, path: Path | None, messages: Sequence[Message],
        on_damage: Callable[[str], None] | None = None,
    ) -> RecallIndex:
        """The index at ``path`` checked against the chat's ``messages``; rebuilt when damaged;
        :class:`IndexBusy` when another process holds it locked."""
        existed = path is not None and path.exists()
        index: RecallIndex | None = None
        try:
            index = cls(path, on_damage)
            if existed:
                index._check(messages)
                index.state = "opened"
        except (sqlite3.Error, IndexDamaged) as exc:
            if isinstance(exc, sqlite3.Error) and _busy(exc):
                if index is not None:
                    index.close()
                raise IndexBusy(f"the index is locked by another process ({exc})") from exc
            reason = str(exc) or type(exc).__name__
            log.warning("Recall index %s rebuilt: %s", path, reason)
            if index is not None:
                index.close()
            return cls.rebuilt(path, messages, on_damage, reason)
        with contextlib.suppress(IndexBusy):  # synced at the next question instead
            index.sync(messages)
        return index

    @classmethod
    def rebuilt(
        cls, path: Path | None, messages: Sequence[Message],
        on_damage: Callable[[str], None] | None = None, reason: str = "rebuilt",
    ) -> RecallIndex:
        """A new index at ``path`` (any file there removed) holding ``messages``."""
        remove_index(path)
        index = cls(path, on_damage)
        index.state = f"rebuilt: {reason}"
        index.sync(messages)
        return index

    # -- damage ----------------------------------------------------------------------------
    def intact(self) -> bool:
        """Whether the index can be used: no damage found, and its file is as this index
        last wrote it (removed, replaced or written by another program: damaged; SQLite
        would go on serving the pages it holds in memory)."""
        replaced = self.path is not None and _identity(self.path) != self._identity
        if self.damaged is None and replaced:
            self._fail("the index file was removed, replaced or changed by another program")
        return self.damaged is None

    def distrust(self, reason: str) -> None:
        """The index gave text the chat file does not hold (``reason``): it is damaged."""
        self._fail(reason)

    def _fail(self, reason: str) -> IndexDamaged:
        """Mark the index damaged (closed; ``on_damage`` told, outside the lock, once)."""
        with self._lock:
            first = self.damaged is None
            if first:
                self.damaged = reason
                self._conn.close()
        if first:
            log.warning("Recall index %s is damaged: %s", self.path, reason)
            if self.on_damage is not None:
                self.on_damage(reason)
        return IndexDamaged(reason)

    def _failure(self, exc: sqlite3.Error) -> IndexUnavailable:
        """What an SQLite error means: another process's lock, else damage."""
        if _busy(exc):
            return IndexBusy(f"the index is locked by another process ({exc})")
        if _query_error(exc):
            return IndexUnavailable(f"the search could not be run ({exc})")
        return self._fail(f"{type(exc).__name__}: {exc}")

    def _usable(self) -> None:
        if self.damaged is not None:
            raise IndexDamaged(self.damaged)

    def _connect(self) -> sqlite3.Connection:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(  # timeout 0: a lock another process holds is not waited for
            ":memory:" if self.path is None else str(self.path), check_same_thread=False,
            timeout=0,
        )
        try:
            conn.execute("PRAGMA synchronous=NORMAL")
            for statement in _SCHEMA:
                conn.execute(statement)
            found = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if found is None:
                conn.execute(
                    "INSERT INTO meta VALUES('schema', ?), ('count', '0')", (SCHEMA_VERSION,)
                )
                conn.commit()
            elif found[0] != SCHEMA_VERSION:
                raise IndexDamaged(f"schema {found[0]}, expected {SCHEMA_VERSION}")
            for mid, seq in conn.execute("SELECT message_id, seq FROM indexed"):
                self._ids.add(str(mid))
                self._seq = max(self._seq, int(seq))
        except BaseException:
            conn.close()
            raise
        return conn

    def _check(self, messages: Sequence[Message]) -> None:
        row = self._conn.execute("SELECT value FROM meta WHERE key='count'").fetchone()
        stored = int(row[0]) if row is not None else -1
        if stored != len(self._ids):
            raise IndexDamaged(f"{len(self._ids)} messages indexed, {stored} recorded")
        query = "SELECT count(DISTINCT message_id) FROM passages"
        passages = self._conn.execute(query).fetchone()[0]
        if passages > len(self._ids):
            raise IndexDamaged("passages of messages that are not recorded")
        known = {m.id for m in messages}
        stray = self._ids - known
        if stray:
            raise IndexDamaged(f"{len(stray)} indexed message(s) are not in the chat file")

    # -- writing ---------------------------------------------------------------------------
    def _run(self, work: Callable[[], T]) -> T:
        """``work()`` on the connection; an SQLite error as :class:`IndexUnavailable` (damage
        reported, see :meth:`_failure`)."""
        try:
            with self._lock:
                self._usable()
                return work()
        except sqlite3.ProgrammingError as exc:  # closed meanwhile (the chat was closed)
            raise IndexUnavailable(str(exc)) from exc
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc

    def sync(self, messages: Sequence[Message]) -> int:
        """Index the messages not indexed yet (system messages are not); how many."""
        return self._run(lambda: self._sync(messages))

    def _sync(self, messages: Sequence[Message]) -> int:
        with self._lock:
            new = [m for m in messages if m.id not in self._ids and m.role != "system"]
            if not new:
                return 0
            calls = {c.id: c for m in new for c in m.tool_calls}
            rows = [row for msg in new for row in message_rows(msg, calls)]
            ids = [(msg.id, self._seq + n) for n, msg in enumerate(new, start=1)]
            self._seq += len(new)
            with self._conn:
                self._conn.executemany("INSERT INTO passages(text, source, message_id, role, "
                                       "first, last) VALUES(?, ?, ?, ?, ?, ?)", rows)
                self._conn.executemany("INSERT OR IGNORE INTO indexed VALUES(?, ?)", ids)
                self._ids.update(m.id for m in new)
                self._passages += len(rows)
                self._conn.execute(
                    "UPDATE meta SET value=? WHERE key='count'", (str(len(self._ids)),)
                )
            self._identity = _identity(self.path)  # as written now
            return len(new)

    # -- reading ---------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return len(self._ids)

    @property
    def passages(self) -> int:
        return self._passages

    def counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many passages hold each (stemmed) term in their text, or else in ``source``."""

        def work() -> dict[str, int]:
            out: dict[str, int] = {}
            for term in terms:
                quoted = '"' + term.replace('"', '""') + '"'
                out[term] = self._count("text : " + quoted) or self._count(quoted)
            return out

        return self._run(work)

    def matching(self, expressions: Sequence[str]) -> dict[str, int]:
        """How many passages match each FTS5 expression (``NEAR("local" "cache", 4)``)."""
        return self._run(lambda: {e: self._count(e) for e in expressions})

    def _count(self, expression: str) -> int:
        query = "SELECT count(*) FROM passages WHERE passages MATCH ?"
        return int(self._conn.execute(query, (clean_text(expression),)).fetchone()[0])

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids

    def search(self, expression: str, *, limit: int) -> list[Hit]:
        """The best ``limit`` passages for an FTS5 ``expression``, best first."""
        if not expression:
            return []
        rows = self._run(lambda: self._conn.execute(
            "SELECT message_id, role, first, last, text, bm25(passages) * "
            "CASE role WHEN 'assistant' THEN ? ELSE 1.0 END AS score, source "
            "FROM passages WHERE passages MATCH ? ORDER BY score LIMIT ?",
            (ASSISTANT_WEIGHT, clean_text(expression), limit),
        ).fetchall())
        return [Hit(str(r[0]), str(r[1]), int(r[2]), int(r[3]), str(r[4]), float(r[5]),
                    str(r[6] or "")) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def message_rows(msg: Message, calls: Mapping[str, ToolCall]) -> list[Row]:
    """The index rows of one message: its passages (a tool output's under its call, found in
    ``calls``), then its calls'. The text is made valid first (:func:`clean_text`): SQLite
    takes no lone surrogate, and a chat may hold one."""
    tool = None
    source = ""
    if msg.role == "tool":
        call = calls.get(msg.tool_call_id or "")
        tool = msg.name or (call.name if call is not None else None)
        source = clean_text(source_text(call) if call is not None else (tool or ""))
    rows: list[Row] = [
        (p.text, source, msg.id, msg.role, p.first, p.last)
        for p in split_passages(clean_text(msg.content), tool=tool)
    ]
    for call in msg.tool_calls:
        rows.extend(call_passages(call, msg.id))
    return rows


def call_text(call: ToolCall) -> tuple[str, str]:
    """A tool call as (header: the tool and its target, body: its other text arguments, one per
    line); raw text for arguments that are not a JSON object."""
    if not call.arguments:
        return call.name, (call.raw_arguments or "").strip()
    target_key = next(
        (k for k in TARGET_KEYS if isinstance(call.arguments.get(k), str) and call.arguments[k]),
        None,
    )
    header = call.name
    if target_key is not None:
        header += " " + " ".join(str(call.arguments[target_key]).split())
    body = "\n".join(
        f"{key}: {value}" for key, value in call.arguments.items()
        if key != target_key and isinstance(value, str) and value.strip()
    )
    return header, body


#: What the output of a common command is about, in the words a question uses ("How many
#: lines does a.py have?" is answered by ``wc -l``'s "177 a.py", which says "lines" nowhere).
COMMAND_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bwc\s+(?:-\w*l|--lines)\b"), "lines line count"),
    (re.compile(r"\bwc\s+(?:-\w*w|--words)\b"), "words count"),
    (re.compile(r"\bwc\s+(?:-\w*c|--bytes)\b"), "bytes size"),
    (re.compile(r"\b(?:du|ls\s+-\w*l\w*|stat)\b"), "size bytes"),
    (re.compile(r"\bgit\s+(?:log|show)\b"), "commit hash message"),
    (re.compile(r"\bgit\s+(?:status|diff)\b"), "changed modified files"),
    (re.compile(r"\bgit\s+(?:branch|checkout|switch)\b"), "branch"),
)


def source_text(call: ToolCall) -> str:
    """The ``source`` column of a tool output's passages: its call's header and what a common
    command's output is about (:data:`COMMAND_WORDS`)."""
    header = call_text(call)[0]
    extra = [words for pattern, words in COMMAND_WORDS if pattern.search(header)]
    return " ".join([header, *extra])


def call_passages(call: ToolCall, message_id: str) -> list[Row]:
    """Index rows of one tool call: each passage of its body under its header (none for a call
    that only names a path: its output's ``source`` carries it)."""
    header, body = (clean_text(part) for part in call_text(call))
    if not body:
        only_path = bool(call.arguments) and all(
            k in PATH_KEYS for k, v in call.arguments.items() if isinstance(v, str)
        )
        return [] if only_path else [(header, "", message_id, "call", 1, 1)]
    return [
        (f"{header}\n{p.text}", "", message_id, "call", p.first, p.last)
        for p in split_passages(body)
    ]


def remove_index(path: Path | None) -> None:
    """Delete an index file and SQLite's side files (nothing when there is none)."""
    if path is None:
        return
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + suffix).unlink()


class MemoryIndexes:
    """In-memory indexes of the latest conversations no chat file backs (replay, bench, tests)."""

    LIMIT = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._indexes: dict[int, tuple[weakref.ref[Conversation], RecallIndex]] = {}

    def get(self, conv: Conversation) -> RecallIndex:
        with self._lock:
            got = self._indexes.get(id(conv))
            if got is not None and got[0]() is conv:
                return got[1]
            if got is not None:
                got[1].close()
            self._indexes.pop(id(conv), None)
            while len(self._indexes) >= self.LIMIT:
                self._indexes.pop(next(iter(self._indexes)))[1].close()
            index = RecallIndex(None)
            self._indexes[id(conv)] = (weakref.ref(conv), index)
            return index
