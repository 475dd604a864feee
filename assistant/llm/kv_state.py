"""Saved KV states of chats, so a reopened chat evaluates only what is new
(docs/PERFORMANCE.md, "Instant resume": keys, checks, cap and measurements).

A file is ``MAGIC``, a length-prefixed JSON header (chat, fingerprint, sizes, sha256 of tokens
and data), the tokens (int32) and the engine's bytes; one that does not check out loads as
nothing, the reason kept in :attr:`StateCache.last_miss`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import threading
import time
import uuid
from array import array
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant import paths
from assistant.atomicfile import fsync_dir, make_dirs
from assistant.llm.base import KVState

log = logging.getLogger(__name__)

MAGIC = b"OAKVSTATE1\n"
SUFFIX = ".kvstate"
FORMAT_VERSION = 1
_LEN = struct.Struct("<I")


def default_dir() -> Path:
    return paths.cache_dir() / "kv-states"


@dataclass(frozen=True)
class Usage:
    files: int
    bytes: int

    def describe(self) -> str:
        return f"{self.bytes / 1e6:,.1f} MB in {self.files} saved chat state(s)"


def _digest(tokens_bytes: bytes, data: bytes | bytearray) -> str:
    h = hashlib.sha256()
    h.update(tokens_bytes)
    h.update(data)
    return h.hexdigest()


class StateCache:
    """The saved states: one folder, one file per (chat, fingerprint), LRU-capped."""

    def __init__(self, root: Path | None = None, limit_bytes: int = 2 * 1024**3) -> None:
        self.root = root or default_dir()
        self.limit_bytes = limit_bytes
        #: Why the last :meth:`load` found nothing ("" after a hit).
        self.last_miss = ""
        self._lock = threading.Lock()

    def file_for(self, chat_id: str, fingerprint: str) -> Path:
        name = hashlib.sha256(f"{fingerprint}\0{chat_id}".encode()).hexdigest()[:40]
        return self.root / (name + SUFFIX)

    # -- writing ---------------------------------------------------------------------
    def save(self, chat_id: str, state: KVState) -> Path | None:
        """Write ``state`` atomically, then evict down to the limit; None when it is empty or
        larger than the limit."""
        tokens_bytes = array("i", state.tokens).tobytes()
        size = len(MAGIC) + 4 + 512 + len(tokens_bytes) + len(state.data)
        if not state.tokens or not state.data or size > self.limit_bytes:
            return None
        header = json.dumps(
            {
                "version": FORMAT_VERSION,
                "chat": chat_id,
                "fingerprint": state.fingerprint,
                "model": state.model,
                "n_tokens": len(state.tokens),
                "data_len": len(state.data),
                "sha256": _digest(tokens_bytes, state.data),
                "saved": time.time(),
            }
        ).encode()
        target = self.file_for(chat_id, state.fingerprint)
        with self._lock:
            make_dirs(self.root)
            tmp = self.root / f".tmp-{uuid.uuid4().hex}"
            try:
                with tmp.open("wb") as fh:
                    fh.write(MAGIC)
                    fh.write(_LEN.pack(len(header)))
                    fh.write(header)
                    fh.write(tokens_bytes)
                    fh.write(state.data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, target)
                fsync_dir(self.root)
            finally:
                tmp.unlink(missing_ok=True)
            self._evict(keep=target)
        return target

    def _files(self) -> list[tuple[float, int, Path]]:
        out: list[tuple[float, int, Path]] = []
        for path in self.root.glob("*" + SUFFIX):  # none when the folder is missing
            with contextlib.suppress(FileNotFoundError):  # deleted meanwhile
                st = path.stat()
                out.append((st.st_mtime, st.st_size, path))
        return out

    def _evict(self, keep: Path | None = None) -> None:
        files = sorted(self._files())  # oldest use first
        total = sum(size for _, size, _ in files)
        for _, size, path in files:
            if total <= self.limit_bytes:
                break
            if path == keep:
                continue
            path.unlink(missing_ok=True)
            total -= size
            log.info("kv state cache: evicted %s (%d bytes)", path.name, size)

    def set_limit(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        with self._lock:
            self._evict()

    # -- reading ---------------------------------------------------------------------
    def _miss(self, why: str) -> None:
        self.last_miss = why
        log.info("kv state cache: %s", why)

    def load(self, chat_id: str, fingerprint: str) -> KVState | None:
        """The verified state saved for ``chat_id`` and ``fingerprint``, or None."""
        path = self.file_for(chat_id, fingerprint)
        try:
            with path.open("rb") as fh:
                got = self._read(fh, chat_id, fingerprint, path.stat().st_size)
        except FileNotFoundError:
            self._miss("no saved state for this chat and model")
            return None
        except (OSError, ValueError) as exc:
            self._miss(f"unreadable saved state ({exc}); evaluating from scratch")
            path.unlink(missing_ok=True)
            return None
        if isinstance(got, str):
            self._miss(got + "; evaluating from scratch")
            path.unlink(missing_ok=True)
            return None
        self.last_miss = ""
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used
        return got

    @staticmethod
    def _read(fh: Any, chat_id: str, fingerprint: str, file_size: int) -> KVState | str:
        got = _read_header(fh)
        if isinstance(got, str):
            return got
        header, hlen = got
        if header.get("version") != FORMAT_VERSION:
            return "saved state of another format"
        if header.get("fingerprint") != fingerprint or header.get("chat") != chat_id:
            return "saved state of another model or settings"
        n_tokens, data_len = int(header.get("n_tokens", -1)), int(header.get("data_len", -1))
        if n_tokens <= 0 or data_len <= 0:
            return "damaged saved state (sizes)"
        if file_size != len(MAGIC) + 4 + hlen + 4 * n_tokens + data_len:
            return "truncated or damaged saved state (size)"
        tokens_bytes = fh.read(4 * n_tokens)
        data = bytearray(data_len)  # read in place: the engine loads it without a copy
        if len(tokens_bytes) != 4 * n_tokens or fh.readinto(data) != data_len:
            return "truncated saved state"
        if _digest(tokens_bytes, data) != header.get("sha256"):
            return "damaged saved state (checksum)"
        tokens = array("i")
        tokens.frombytes(tokens_bytes)
        return KVState(
            model=str(header.get("model", "")), tokens=tuple(tokens), data=data,
            fingerprint=fingerprint,
        )

    # -- housekeeping ----------------------------------------------------------------
    def forget(self, chat_id: str) -> int:
        """Delete every saved state of ``chat_id`` (any model); returns how many."""
        removed = 0
        with self._lock:
            for _, _, path in self._files():
                try:
                    with path.open("rb") as fh:
                        got = _read_header(fh)
                except OSError:
                    continue
                if not isinstance(got, str) and got[0].get("chat") == chat_id:
                    path.unlink(missing_ok=True)
                    removed += 1
        return removed

    def usage(self) -> Usage:
        files = self._files()
        return Usage(len(files), sum(size for _, size, _ in files))

    def clear(self) -> Usage:
        """Delete every saved state; returns what was freed."""
        with self._lock:
            files = self._files()
            for _, _, path in files:
                path.unlink(missing_ok=True)
        return Usage(len(files), sum(size for _, size, _ in files))


def _read_header(fh: Any) -> tuple[dict[str, Any], int] | str:
    """A saved state's header and its length in bytes, or why it cannot be read."""
    if fh.read(len(MAGIC)) != MAGIC:
        return "not a saved state (bad magic)"
    raw_len = fh.read(4)
    if len(raw_len) != 4:
        return "truncated saved state"
    (hlen,) = _LEN.unpack(raw_len)
    if hlen > 64 * 1024:
        return "damaged saved state (header length)"
    try:
        header = json.loads(fh.read(hlen))
    except ValueError:
        return "damaged saved state (header)"
    if not isinstance(header, dict):
        return "saved state of another format"
    return header, hlen


class StateWriter:
    """Writes states on a thread of its own; a newer state for a chat replaces one still
    waiting. :meth:`close` writes what is pending and stops the thread."""

    def __init__(self, cache: StateCache) -> None:
        self.cache = cache
        self._pending: dict[str, KVState] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kv-state-writer")
        #: The latest write queued (one thread: every earlier one is done when it is).
        self._last: Future[None] | None = None
        #: Paths written, in order (tests and the benchmark read it).
        self.written: list[Path] = []

    def submit(self, chat_id: str, state: KVState) -> None:
        with self._lock:
            if chat_id not in self._pending:
                try:
                    self._last = self._pool.submit(self._write, chat_id)
                except RuntimeError:  # closed: nothing more is written
                    return
            self._pending[chat_id] = state

    def _write(self, chat_id: str) -> None:
        with self._lock:
            state = self._pending.pop(chat_id)
        try:
            path = self.cache.save(chat_id, state)
        except OSError as exc:
            log.warning("could not save the chat's model state: %s", exc)
            return
        except Exception:  # a bug: said, and the next states are still written
            log.exception("could not save the chat's model state")
            return
        if path is not None:
            self.written.append(path)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything submitted is written; False on timeout."""
        last = self._last
        return last is None or not wait([last], timeout).not_done

    def close(self) -> None:
        self._pool.shutdown(wait=True)
