"""The saved-state cache: a match loads, anything else loads nothing (and says why)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from assistant.llm.base import KVState
from assistant.llm.kv_state import MAGIC, StateCache, StateWriter
from assistant.llm.provision import file_sha256


def _state(n: int, fingerprint: str = "fp-a", seed: int = 1) -> KVState:
    tokens = tuple((seed * 7919 + i * 31) % 50_000 for i in range(n))
    data = bytes((seed + i) % 251 for i in range(n * 40))
    return KVState(model="/models/m.gguf", tokens=tokens, data=data, fingerprint=fingerprint)


def test_a_saved_state_loads_back_exactly(tmp_path: Path) -> None:
    cache = StateCache(tmp_path / "kv", limit_bytes=10**7)
    state = _state(300)
    path = cache.save("chat-1", state)
    assert path is not None and path.exists() and path.parent == tmp_path / "kv"
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp")]
    got = cache.load("chat-1", "fp-a")
    assert got == state
    assert cache.last_miss == ""
    assert cache.usage().files == 1 and cache.usage().bytes == path.stat().st_size


def test_another_model_or_chat_finds_nothing(tmp_path: Path) -> None:
    cache = StateCache(tmp_path, limit_bytes=10**7)
    cache.save("chat-1", _state(100))
    assert cache.load("chat-1", "fp-other") is None
    assert "no saved state" in cache.last_miss
    assert cache.load("chat-2", "fp-a") is None
    # The same chat saved for two models keeps both.
    cache.save("chat-1", _state(50, fingerprint="fp-b"))
    assert cache.load("chat-1", "fp-a") is not None
    assert cache.load("chat-1", "fp-b") is not None


def test_a_file_renamed_into_another_key_is_refused(tmp_path: Path) -> None:
    """The header is checked, not only the file name."""
    cache = StateCache(tmp_path, limit_bytes=10**7)
    src = cache.save("chat-1", _state(100))
    assert src is not None
    os.replace(src, cache.file_for("chat-1", "fp-b"))
    assert cache.load("chat-1", "fp-b") is None
    assert "another model" in cache.last_miss


@pytest.mark.parametrize(
    "damage",
    ["flip a data byte", "flip a token", "truncate", "append", "bad magic", "bad header"],
)
def test_a_damaged_file_loads_nothing_and_is_removed(tmp_path: Path, damage: str) -> None:
    cache = StateCache(tmp_path, limit_bytes=10**7)
    path = cache.save("chat-1", _state(200))
    assert path is not None
    raw = bytearray(path.read_bytes())
    if damage == "flip a data byte":
        raw[-5] ^= 0x40
    elif damage == "flip a token":
        raw[len(MAGIC) + 4 + int.from_bytes(raw[len(MAGIC) : len(MAGIC) + 4], "little")] ^= 1
    elif damage == "truncate":
        raw = raw[: len(raw) - 1000]
    elif damage == "append":
        raw += b"\0" * 10
    elif damage == "bad magic":
        raw[0:4] = b"GGUF"
    else:
        raw[len(MAGIC) + 6] = ord("}")
    path.write_bytes(bytes(raw))
    assert cache.load("chat-1", "fp-a") is None
    assert cache.last_miss and "evaluating from scratch" in cache.last_miss
    assert not path.exists()


def test_least_recently_used_states_are_evicted(tmp_path: Path) -> None:
    one = len(_state(1000).data) + 4000 + 600  # one file, about
    cache = StateCache(tmp_path, limit_bytes=int(one * 2.5))
    for i, chat in enumerate(["a", "b"]):
        cache.save(chat, _state(1000, seed=i))
    # Use "a" (a load marks it used) so "b" is now the least recently used.
    old = time.time() - 100
    os.utime(cache.file_for("b", "fp-a"), (old, old))
    os.utime(cache.file_for("a", "fp-a"), (old - 50, old - 50))
    assert cache.load("a", "fp-a") is not None
    cache.save("c", _state(1000, seed=3))
    assert cache.load("b", "fp-a") is None
    assert cache.load("a", "fp-a") is not None and cache.load("c", "fp-a") is not None
    assert cache.usage().bytes <= cache.limit_bytes
    # A lower limit evicts at once; a state bigger than the whole limit is not written.
    cache.set_limit(int(one * 1.2))
    assert cache.usage().files == 1
    assert cache.save("d", _state(5000)) is None
    freed = cache.clear()
    assert freed.files == 1 and cache.usage().files == 0


def test_forget_deletes_every_state_of_a_chat(tmp_path: Path) -> None:
    cache = StateCache(tmp_path, limit_bytes=10**7)
    cache.save("chat-1", _state(50))
    cache.save("chat-1", _state(50, fingerprint="fp-b"))
    cache.save("chat-2", _state(50))
    assert cache.forget("chat-1") == 2
    assert cache.load("chat-1", "fp-a") is None and cache.load("chat-2", "fp-a") is not None


def test_empty_states_are_not_saved(tmp_path: Path) -> None:
    cache = StateCache(tmp_path, limit_bytes=10**7)
    assert cache.save("chat", KVState(model="m", tokens=(), data=b"")) is None
    assert cache.usage().files == 0


def test_the_writer_keeps_only_the_newest_pending_state_per_chat(tmp_path: Path) -> None:
    cache = StateCache(tmp_path, limit_bytes=10**8)
    writer = StateWriter(cache)
    try:
        for seed in range(5):
            writer.submit("chat", _state(400, seed=seed))
        assert writer.flush(timeout=30)
        assert cache.load("chat", "fp-a") == _state(400, seed=4)
    finally:
        writer.close()
    writer.submit("chat", _state(10))  # after close: ignored, no thread left running
    assert writer.flush(timeout=1)


def test_a_failed_write_is_logged_and_the_next_states_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cache = StateCache(tmp_path, limit_bytes=10**8)
    save = cache.save
    failures = iter([OSError("disk full"), ValueError("a bug")])

    def failing_once(chat_id: str, state: KVState) -> Path | None:
        error = next(failures, None)
        if error is not None:
            raise error
        return save(chat_id, state)

    monkeypatch.setattr(cache, "save", failing_once)
    writer = StateWriter(cache)
    try:
        for chat in ("a", "b", "c"):
            writer.submit(chat, _state(400))
            assert writer.flush(timeout=30)
    finally:
        writer.close()
    assert len(writer.written) == 1
    assert cache.load("c", "fp-a") == _state(400)
    assert cache.load("a", "fp-a") is None and cache.load("b", "fp-a") is None
    assert "disk full" in caplog.text and "a bug" in caplog.text


def test_file_sha256_is_remembered_by_path_size_and_time(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"x" * 1000)
    first = file_sha256(model)
    import hashlib

    assert first == hashlib.sha256(model.read_bytes()).hexdigest()
    assert file_sha256(model, known="ABC") == "abc"
    model.write_bytes(b"GGUF" + b"y" * 1000)
    os.utime(model, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert file_sha256(model) != first
