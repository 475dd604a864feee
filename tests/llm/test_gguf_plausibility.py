"""Plausibility checks on every GGUF header field the app uses (issue 28 item 3): counts,
lengths, tensor shapes and offsets must fit in the file, the trained context must be one a
model can have, and the window asked of llama.cpp is capped by what the weights back."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from assistant.llm import gguf
from assistant.llm.gguf import GGUFHeaderError, read_header, trained_context

U32, STRING = 4, 8
F32, F16, Q4_1 = 0, 1, 3


def _string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def _file(
    kvs: list[tuple[str, int, Any]],
    tensors: list[tuple[str, list[int], int, int]],
    *,
    data: int = 4096,
    tensor_count: int | None = None,
) -> bytes:
    """A little-endian GGUF v3: metadata, then (name, shape, type, offset) tensor
    descriptions, then ``data`` bytes of tensor data at the default 32-byte alignment."""
    out = b"GGUF" + struct.pack(
        "<IQQ", 3, len(tensors) if tensor_count is None else tensor_count, len(kvs)
    )
    for key, kind, value in kvs:
        out += _string(key) + struct.pack("<I", kind)
        out += struct.pack("<I", value) if kind == U32 else _string(value)
    for name, shape, kind, offset in tensors:
        out += _string(name) + struct.pack("<I", len(shape))
        out += b"".join(struct.pack("<Q", n) for n in shape)
        out += struct.pack("<IQ", kind, offset)
    out += b"\0" * (-len(out) % 32)
    return out + b"\0" * data


def _model(ctx: int, *, layers: int = 2, kv_dim: int = 64, data: int | None = None) -> bytes:
    """A small 'llama' whose attention tensors imply ``layers * 2 * kv_dim`` f16 cache
    elements per token."""
    kvs = [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "tiny"),
        ("llama.context_length", U32, ctx),
    ]
    tensors = []
    offset = 0
    for layer in range(layers):
        for part in ("k", "v"):
            tensors.append((f"blk.{layer}.attn_{part}.weight", [32, kv_dim], F16, offset))
            offset += 32 * kv_dim * 2
    return _file(kvs, tensors, data=offset if data is None else data)


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "m.gguf"
    path.write_bytes(data)
    return path


def test_a_real_sized_claim_is_kept_and_the_cache_size_is_read(tmp_path: Path) -> None:
    header = read_header(_write(tmp_path, _model(4096)))
    assert header.context_length == 4096
    assert header.tensor_count == 4
    assert header.kv_bytes_per_token == 2 * 2 * 64 * 2  # layers * (k + v) * dim * f16
    assert header.usable_context == 4096
    assert header.cap_note() is None


def test_a_context_of_a_billion_is_refused_with_a_clear_reason(tmp_path: Path) -> None:
    path = _write(tmp_path, _model(10**9))
    with pytest.raises(GGUFHeaderError, match="claims a trained context of 1,000,000,000"):
        read_header(path)
    assert trained_context(path) is None


def test_a_plausible_claim_the_weights_cannot_back_is_capped(tmp_path: Path) -> None:
    """A 16,000,000-token claim on a file whose cache costs 512 bytes a token: the window is
    what the KV budget allows, and the user is told why."""
    path = _write(tmp_path, _model(16_000_000))
    header = read_header(path)
    cap = gguf.KV_BUDGET_FLOOR // 512
    assert header.context_cap == cap
    assert header.usable_context == cap == trained_context(path)
    note = header.cap_note()
    assert note is not None and "16,000,000" in note and f"{cap:,}" in note


def test_the_cap_grows_with_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, _model(16_000_000))
    with path.open("r+b") as fh:  # a sparse file as large as the budget floor
        fh.truncate(gguf.KV_BUDGET_FLOOR)
    header = read_header(path)
    assert header.context_cap == gguf.KV_PER_FILE_BYTE * gguf.KV_BUDGET_FLOOR // 512


HOSTILE = {
    "tensor count": (_file([], [], tensor_count=1 << 40), "it claims 1,099,511,627,776 tensors"),
    "tensor count past the end": (_file([], [], data=0, tensor_count=60_000), "cannot fit"),
    "five dimensions": (_file([], [("t", [1, 1, 1, 1, 1], F32, 0)]), "5 dimensions"),
    "no dimensions": (_file([], [("t", [], F32, 0)]), "0 dimensions"),
    "shape larger than the file": (
        _file([], [("t", [1 << 30, 1 << 30], F32, 0)]),
        "larger than the file",
    ),
    "data past the end": (_file([], [("t", [64, 64], F32, 0)], data=8_000), "runs past the end"),
    "offset past the end": (_file([], [("t", [8], F32, 1 << 50)]), "runs past the end"),
    "partial block": (_file([], [("t", [33], Q4_1, 0)]), "32-element blocks"),
    "long tensor name": (_file([], [("t" * 5_000, [8], F32, 0)]), "of 5,000 bytes"),
    "bad alignment": (
        _file([("general.alignment", U32, 24)], [("t", [8], F32, 0)]),
        "alignment 24",
    ),
    "huge key count": (
        b"GGUF" + struct.pack("<IQQ", 3, 0, 500_000) + b"\0" * 64,
        "cannot fit",
    ),
}


@pytest.mark.parametrize(("data", "reason"), HOSTILE.values(), ids=list(HOSTILE))
def test_implausible_headers_are_refused(tmp_path: Path, data: bytes, reason: str) -> None:
    with pytest.raises(GGUFHeaderError, match=reason):
        read_header(_write(tmp_path, data))


def test_a_huge_name_is_skipped_not_read(tmp_path: Path) -> None:
    kvs = [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "n" * (gguf.MAX_TEXT_VALUE_BYTES + 1)),
        ("llama.context_length", U32, 2048),
    ]
    header = read_header(_write(tmp_path, _file(kvs, [])))
    assert header.name is None
    assert header.context_length == 2048


def test_the_context_key_may_come_before_the_architecture(tmp_path: Path) -> None:
    kvs = [("llama.context_length", U32, 2048), ("general.architecture", STRING, "llama")]
    assert read_header(_write(tmp_path, _file(kvs, []))).context_length == 2048


def test_a_long_vocabulary_is_walked_quickly_in_chunks(tmp_path: Path) -> None:
    """300,000 strings spread over several read chunks, skipped without holding them."""
    tokens = [f"token{i}".encode() for i in range(300_000)]
    array = struct.pack("<IQ", STRING, len(tokens)) + b"".join(_string(t) for t in tokens)
    out = b"GGUF" + struct.pack("<IQQ", 3, 0, 3)
    out += _string("general.architecture") + struct.pack("<I", STRING) + _string("llama")
    out += _string("tokenizer.ggml.tokens") + struct.pack("<I", 9) + array
    out += _string("llama.context_length") + struct.pack("<II", U32, 4096)
    assert len(array) > 3 * (1 << 20)
    assert read_header(_write(tmp_path, out + b"\0" * 64)).context_length == 4096
