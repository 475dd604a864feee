"""The GGUF header reader: the trained context comes from the file before any context is
created, and a damaged header is a clear error, never a hang or a huge allocation
(issue 18, item 6)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.llm.gguf import GGUFHeaderError, read_header, trained_context
from assistant.llm.registry import load_registry, model_path

U32, STRING, ARRAY, U64 = 4, 8, 9, 10


def _gguf(
    kvs: list[tuple[str, int, Any]], *, version: int = 3, order: str = "<", tensors: int = 0
) -> bytes:
    """A GGUF header with the given (key, type, value) metadata; arrays are
    ``(item_type, [items])``."""
    length = "I" if version == 1 else "Q"

    def pack(fmt: str, value: Any) -> bytes:
        return struct.pack(order + fmt, value)

    def string(text: str) -> bytes:
        raw = text.encode()
        return pack(length, len(raw)) + raw

    def value(kind: int, v: Any) -> bytes:
        if kind == U32:
            return pack("I", v)
        if kind == U64:
            return pack("Q", v)
        if kind == STRING:
            return string(v)
        item, items = v
        return pack("I", item) + pack(length, len(items)) + b"".join(value(item, x) for x in items)

    out = b"GGUF" + pack("I", version) + pack(length, tensors) + pack(length, len(kvs))
    for key, kind, v in kvs:
        out += string(key) + pack("I", kind) + value(kind, v)
    return out + b"\0" * 64  # stands in for tensor data


def _header(ctx: int = 4096) -> list[tuple[str, int, Any]]:
    return [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "Test model"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, [f"tok{i}" for i in range(300)])),
        ("tokenizer.ggml.scores", ARRAY, (U32, list(range(300)))),
        ("llama.context_length", U32, ctx),
        ("llama.embedding_length", U32, 64),
    ]


def _write(tmp_path: Path, data: bytes, name: str = "m.gguf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("version", "order"), [(3, "<"), (2, "<"), (1, "<"), (3, ">")])
def test_reads_the_trained_context_in_every_layout(
    tmp_path: Path, version: int, order: str
) -> None:
    path = _write(tmp_path, _gguf(_header(12_345), version=version, order=order))
    header = read_header(path)
    assert (header.version, header.architecture, header.context_length) == (
        version,
        "llama",
        12_345,
    )
    assert header.name == "Test model"


def test_a_64_bit_context_length_and_a_missing_one(tmp_path: Path) -> None:
    kvs = [("general.architecture", STRING, "qwen2"), ("qwen2.context_length", U64, 1 << 20)]
    assert trained_context(_write(tmp_path, _gguf(kvs))) == 1 << 20
    no_ctx = [("general.architecture", STRING, "llama"), ("llama.block_count", U32, 2)]
    assert read_header(_write(tmp_path, _gguf(no_ctx), "b.gguf")).context_length is None


def test_the_registered_models_headers_match_the_registry() -> None:
    checked = 0
    for entry in load_registry().models:
        path = model_path(entry)
        if path.is_file():
            assert read_header(path).context_length == entry.context_length
            checked += 1
    assert checked >= 1  # the embedded model is always provisioned for the tests


def _raw_kv(key: bytes, kind: int, payload: bytes) -> bytes:
    return (
        b"GGUF"
        + struct.pack("<IQQ", 3, 0, 1)
        + struct.pack("<Q", len(key))
        + key
        + struct.pack("<I", kind)
        + payload
    )


DAMAGED = {
    "empty": (b"", "not a GGUF"),
    "ggml": (b"GGML" + b"\0" * 40, "not a GGUF"),
    "version": (b"GGUF" + struct.pack("<I", 7) + b"\0" * 40, "version 7"),
    "truncated": (_gguf(_header())[:200], "cut short"),
    "huge key": (
        b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 40) + b"k" * 30,
        "damaged",
    ),
    "huge key count": (b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 40), "metadata keys"),
    "huge array": (
        _raw_kv(b"x", ARRAY, struct.pack("<IQ", U32, 1 << 60)) + b"\0" * 64,
        "runs past the end",
    ),
    "huge string array": (
        _raw_kv(b"x", ARRAY, struct.pack("<IQ", STRING, 1 << 60)) + b"\0" * 64,
        "runs past the end",
    ),
    "huge string": (_raw_kv(b"x", STRING, struct.pack("<Q", 1 << 62)), "runs past the end"),
    "bad type": (_raw_kv(b"general.architecture", 99, b"\0" * 16), "unknown type 99"),
    "zero context": (
        _gguf([("general.architecture", STRING, "llama"), ("llama.context_length", U32, 0)]),
        "invalid trained context",
    ),
}


@pytest.mark.parametrize(("data", "reason"), DAMAGED.values(), ids=list(DAMAGED))
def test_damaged_headers_are_clear_errors(tmp_path: Path, data: bytes, reason: str) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(GGUFHeaderError, match=reason):
        read_header(path)
    assert trained_context(path) is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_headers_never_crash(tmp_path_factory: pytest.TempPathFactory, data: Any) -> None:
    content = bytearray(_gguf(_header()))
    for _ in range(data.draw(st.integers(1, 6))):
        pos = data.draw(st.integers(0, len(content) - 1))
        content[pos] = data.draw(st.integers(0, 255))
    path = tmp_path_factory.mktemp("fuzz") / "f.gguf"
    path.write_bytes(bytes(content))
    try:
        header = read_header(path)
    except GGUFHeaderError as exc:
        assert str(exc)
    else:
        assert header.context_length is None or header.context_length > 0
