"""Exact prompt tokenization from memoized pieces cut before each message marker, so a
prompt is not tokenized whole before every call. Why a cut is safe and how the backend checks
it for a vocabulary: docs/PERFORMANCE.md ("Incremental prompt tokenization").
"""

from __future__ import annotations

import itertools
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sized
from typing import Any, Generic, TypeVar

TURN_ROLE_NAMES = ("assistant", "model", "bot")

_PROBE_TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "read_file", "arguments": '{"path": "src/a <|im_start|>.py"}'},
}
#: Conversations the cached path must tokenize exactly like a full tokenization.
PROBE_CONVERSATIONS: tuple[tuple[dict[str, Any], ...], ...] = (
    (
        {"role": "system", "content": "You are terse.\n"},
        {"role": "user", "content": "  Hello there  "},
        {"role": "assistant", "content": "\nHi!\n\n"},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": " "},
        {"role": "user", "content": "Ünïcödé → 漢字 🙂\t\r\nend\n\n\n"},
    ),
    (
        {"role": "user", "content": "typed <|im_start|>user\nhi<|im_end|>\n<|im_start|>x"},
        {"role": "assistant", "content": "<start_of_turn>model\n<end_of_turn>\n<bos>"},
        {"role": "assistant", "content": "", "tool_calls": [_PROBE_TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file",
         "content": "def f():\n    return '<|im_start|>'  \n"},
        {"role": "user", "content": "\n<|im_start|>\n\n<|im_start|>  <|im_start|><|im_start|>"},
        {"role": "user", "content": "x" * 300 + " " * 40 + "\n" * 5},
    ),
)
PROBE_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file <|im_start|> as text.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
)


def self_overlaps(marker: bytes) -> bool:
    """Whether two occurrences of ``marker`` can overlap (a proper prefix is a suffix)."""
    return any(marker[:k] == marker[-k:] for k in range(1, len(marker)))


def overlaps(other: bytes, marker: bytes) -> bool:
    """Whether an occurrence of ``other`` can share a byte with one of ``marker``."""
    if marker in other:
        return True
    for k in range(1, min(len(other), len(marker))):
        if other.endswith(marker[:k]) or other.startswith(marker[-k:]):
            return True
    return False


def chars_before(texts: Iterator[bytes], first: bytes) -> set[bytes]:
    """Every UTF-8 character that directly precedes ``first`` inside some token text."""
    found: set[bytes] = set()
    for text in texts:
        j = text.find(first, 1)
        while j != -1:
            k = j - 1
            while k > 0 and (text[k] & 0xC0) == 0x80:
                k -= 1
            found.add(text[k:j])
            j = text.find(first, j + 1)
    return found


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUMemo(Generic[K, V]):
    """A thread-safe memo that drops the least recently used values past ``entries`` or
    past ``weight`` held (a value weighs its length; one heavier than that is not kept)."""

    def __init__(self, entries: int, weight: int) -> None:
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._entries = entries
        self._weight = weight
        self.held = 0
        self.hits = self.misses = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            got = self._data.get(key)
            if got is None:
                return None
            self._data.move_to_end(key)
            return got[0]

    def put(self, key: K, value: V) -> None:
        weight = len(value) if isinstance(value, Sized) else 1
        if weight > self._weight:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.held -= old[1]
            self._data[key] = (value, weight)
            self.held += weight
            while len(self._data) > self._entries or self.held > self._weight:
                _, (_, dropped) = self._data.popitem(last=False)
                self.held -= dropped

    def cached(self, key: K, make: Callable[[], V]) -> V:
        """The value kept for ``key``, else ``make()`` (kept)."""
        got = self.get(key)
        self.hits += got is not None
        if got is None:
            self.misses += 1
            got = make()
            self.put(key, got)
        return got


class IncrementalTokenizer:
    """``tokenize_piece(piece, add_special)`` is the model's tokenizer (``add_special``: BOS,
    first piece only); ``split_ok(c)``: whether a cut after character ``c`` is safe (None:
    always)."""

    def __init__(
        self,
        marker: str,
        tokenize_piece: Callable[[str, bool], list[int]],
        split_ok: Callable[[str], bool] | None = None,
        *,
        max_tokens: int = 400_000,
    ) -> None:
        if not marker:
            raise ValueError("empty marker")
        self.marker = marker
        self._tokenize_piece = tokenize_piece
        self._split_ok = split_ok
        self._memo: LRUMemo[tuple[str, bool], array[int]] = LRUMemo(max_tokens, max_tokens)

    def split(self, text: str) -> list[str]:
        """``text`` cut right before each (safe) occurrence of the marker."""
        marker, ok = self.marker, self._split_ok
        pieces: list[str] = []
        start = 0
        pos = text.find(marker, 1)
        while pos != -1:
            if ok is None or ok(text[pos - 1]):
                pieces.append(text[start:pos])
                start = pos
            pos = text.find(marker, pos + len(marker))
        pieces.append(text[start:])
        return pieces

    def _piece(self, piece: str, add_special: bool) -> array[int]:
        return self._memo.cached(
            (piece, add_special), lambda: array("i", self._tokenize_piece(piece, add_special))
        )

    def pieces(self, text: str, add_special: bool) -> list[array[int]]:
        return [
            self._piece(p, add_special and i == 0) for i, p in enumerate(self.split(text))
        ]

    def tokens(self, text: str, add_special: bool) -> list[int]:
        return list(itertools.chain.from_iterable(self.pieces(text, add_special)))

    def count(self, text: str, add_special: bool) -> int:
        return sum(len(arr) for arr in self.pieces(text, add_special))
