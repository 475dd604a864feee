"""Reading a GGUF file's header without loading the model, for the trained context, which
is needed before llama.cpp allocates a window (a 131,072-token window for a model trained on
8,192 made the first load of an unregistered file take 8x the memory).

Every length is checked against the file size and fixed limits, so a damaged or hostile
header is a :class:`GGUFHeaderError`, never a huge allocation or a hang; and the window is
also capped by the KV cache the file's attention tensors can back (:attr:`GGUFHeader.context_cap`).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAGIC = b"GGUF"
#: Bounds that no real model comes near.
MAX_KEYS = 1_000_000
MAX_KEY_BYTES = 65_536
MAX_ARRAY_DEPTH = 4
#: Tensors in one file (large mixture-of-experts models have a few thousand).
MAX_TENSORS = 65_536
#: A tensor's name (llama.cpp's own limit is 64 bytes) and dimensions (ggml has 4).
MAX_TENSOR_NAME_BYTES = 1_024
MAX_DIMS = 4
#: The longest trained context a header may claim (the longest real ones are about 10
#: million tokens); a larger claim is a damaged or altered file.
MAX_TRAINED_CONTEXT = 1 << 24
#: Text values read from the header (architecture, name); longer ones are not read.
MAX_TEXT_VALUE_BYTES = 4_096
#: Memory the KV cache of a header-derived window may take: this many bytes, or
#: :data:`KV_PER_FILE_BYTE` times the file's size when that is more (a real model's
#: trained window fits; a header that claims a window its weights cannot back does not).
KV_BUDGET_FLOOR = 512 * 1024 * 1024
KV_PER_FILE_BYTE = 4
#: Bytes of one cached key or value element (llama.cpp's default f16 cache).
KV_ELEMENT_BYTES = 2
#: Bytes read from the file at a time.
_CHUNK = 1 << 20

# Smallest encodings: a key/value pair (length, 1-byte key, type, 1-byte value) and a
# tensor description (length, 1-byte name, dimension count, one dimension, type, offset).
_MIN_KV_BYTES = 8 + 1 + 4 + 1
_MIN_TENSOR_BYTES = 8 + 1 + 4 + 8 + 4 + 8
_ATTENTION = re.compile(r"blk\.\d+\.attn_(?:k|v|qkv)\.weight")

#: ggml type -> (elements per block, bytes per block), for the types whose layout is
#: fixed; a tensor of another type is only checked to start inside the file.
_GGML_TYPES = {
    0: (1, 4),  # F32
    1: (1, 2),  # F16
    2: (32, 18),  # Q4_0
    3: (32, 20),  # Q4_1
    6: (32, 22),  # Q5_0
    7: (32, 24),  # Q5_1
    8: (32, 34),  # Q8_0
    9: (32, 36),  # Q8_1
    10: (256, 84),  # Q2_K
    11: (256, 110),  # Q3_K
    12: (256, 144),  # Q4_K
    13: (256, 176),  # Q5_K
    14: (256, 210),  # Q6_K
    15: (256, 292),  # Q8_K
    24: (1, 1),  # I8
    25: (1, 2),  # I16
    26: (1, 4),  # I32
    27: (1, 8),  # I64
    28: (1, 8),  # F64
    30: (1, 2),  # BF16
}

#: value type -> struct format of one scalar: (u)int8, (u)int16, (u)int32, float32, bool;
#: (u)int64, float64
_SCALARS = {**dict(enumerate("BbHhIif?")), 10: "Q", 11: "q", 12: "d"}
_STRING = 8
_ARRAY = 9


class GGUFHeaderError(ValueError):
    """The file is not GGUF or its header is damaged (the message says where)."""


@dataclass(frozen=True)
class GGUFHeader:
    version: int
    architecture: str | None
    #: The trained context length, or None when the header does not give one.
    context_length: int | None
    name: str | None = None
    tensor_count: int = 0
    #: Bytes one token takes in an f16 KV cache, from the attention tensors (None: unknown).
    kv_bytes_per_token: int | None = None
    file_size: int = 0

    @property
    def context_cap(self) -> int | None:
        """The longest window whose KV cache fits the budget (None: no cap known)."""
        if not self.kv_bytes_per_token:
            return None
        budget = max(KV_BUDGET_FLOOR, KV_PER_FILE_BYTE * self.file_size)
        return max(1, budget // self.kv_bytes_per_token)

    @property
    def usable_context(self) -> int | None:
        """The trained context capped by :attr:`context_cap` (whichever is known)."""
        known = [n for n in (self.context_length, self.context_cap) if n is not None]
        return min(known) if known else None

    def cap_note(self) -> str | None:
        """A sentence for the user when the claimed context is more than the file backs."""
        usable = self.usable_context
        if self.context_length is None or usable is None or usable >= self.context_length:
            return None  # nothing claimed, or the claim is backed
        return (
            f"the header claims a trained context of {self.context_length:,} tokens, more "
            f"than its weights can back; the window is capped at {usable:,}"
        )


def read_header(path: Path) -> GGUFHeader:
    """The header of the GGUF file at ``path`` (:class:`GGUFHeaderError`, ``OSError``)."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        return _Reader(fh, size).header()


def trained_context(path: Path) -> int | None:
    """``read_header(path).usable_context``, or None when the header cannot tell."""
    try:
        return read_header(path).usable_context
    except (OSError, GGUFHeaderError):
        return None


def _past_end(what: str) -> GGUFHeaderError:
    return GGUFHeaderError(f"the header is cut short or damaged ({what} runs past the end)")


class _Reader:
    """Reads through a buffer (a vocabulary of 250,000 strings: well under a second)."""

    def __init__(self, fh: IO[bytes], size: int) -> None:
        self.fh = fh
        self.size = size
        self.order = "<"
        self.version = 0
        self.pos = 0
        self.buf = b""
        self.buf_start = 0

    # -- primitives ------------------------------------------------------------------------
    def _fill(self, n: int) -> None:
        """Buffer the ``n`` bytes at ``pos`` (the caller checked they are in the file)."""
        self.fh.seek(self.pos)
        self.buf = self.fh.read(max(n, _CHUNK))
        self.buf_start = self.pos
        if len(self.buf) < n:
            raise GGUFHeaderError("the header is cut short (the file changed while read)")

    def _read(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > self.size:
            raise _past_end(what)
        start = self.pos - self.buf_start
        if start + n > len(self.buf):
            self._fill(n)
            start = 0
        self.pos += n
        return self.buf[start : start + n]

    def _unpack(self, fmt: str, what: str) -> Any:
        raw = self._read(struct.calcsize(fmt), what)
        return struct.unpack(self.order + fmt, raw)[0]

    def _length(self, what: str) -> int:
        return int(self._unpack("I" if self.version == 1 else "Q", what))

    def _string(self, what: str, limit: int | None = None) -> bytes:
        n = self._length(what)
        if limit is not None and n > limit:
            raise GGUFHeaderError(f"the header is damaged ({what} of {n:,} bytes)")
        return self._read(n, what)

    def _skip(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _past_end(what)
        self.pos += n

    def _skip_strings(self, count: int, key: str) -> None:
        """Skip ``count`` length-prefixed strings (the tight loop of the whole reader)."""
        fmt = self.order + ("I" if self.version == 1 else "Q")
        width = struct.calcsize(fmt)
        unpack_from = struct.unpack_from
        for _ in range(count):
            start = self.pos - self.buf_start
            if start < 0 or start + width > len(self.buf):
                if self.pos + width > self.size:
                    raise _past_end(f"the array {key!r}")
                self._fill(width)
                start = 0
            self.pos += width + unpack_from(fmt, self.buf, start)[0]
            if self.pos > self.size:
                raise _past_end(f"the array {key!r}")

    # -- structure -------------------------------------------------------------------------
    def header(self) -> GGUFHeader:
        if self.size < 8 or self._read(4, "the magic") != MAGIC:
            raise GGUFHeaderError("it is not a GGUF model file (the first bytes are not 'GGUF')")
        raw_version = self._read(4, "the version")
        version = struct.unpack("<I", raw_version)[0]
        if version > 0xFFFF:  # written on a big-endian machine
            self.order = ">"
            version = struct.unpack(">I", raw_version)[0]
        if version not in (1, 2, 3):
            raise GGUFHeaderError(f"GGUF version {version} is not supported (1-3 are)")
        self.version = version
        tensors = self._length("the tensor count")
        keys = self._length("the key count")
        if keys > MAX_KEYS:
            raise GGUFHeaderError(f"the header is damaged (it claims {keys:,} metadata keys)")
        if tensors > MAX_TENSORS:
            raise GGUFHeaderError(f"the header is damaged (it claims {tensors:,} tensors)")
        if keys * _MIN_KV_BYTES + tensors * _MIN_TENSOR_BYTES > self.size - self.pos:
            raise GGUFHeaderError(
                f"the header is cut short or damaged ({keys:,} metadata keys and "
                f"{tensors:,} tensors cannot fit in a file of {self.size:,} bytes)"
            )
        values: dict[str, Any] = {}
        for index in range(keys):
            key = self._string(f"metadata key {index + 1}", MAX_KEY_BYTES).decode(
                "utf-8", errors="replace"
            )
            kind = int(self._unpack("I", f"the type of {key!r}"))
            if key in ("general.architecture", "general.name", "general.alignment") or (
                key.endswith(".context_length") and kind in _SCALARS
            ):
                values[key] = self._value(kind, key, 0)
            else:
                self._skip_value(kind, key, 0)
        arch = values.get("general.architecture")
        if not isinstance(arch, str):
            arch = None
        ctx = values.get(f"{arch}.context_length") if arch else None
        if ctx is not None and (not isinstance(ctx, int) or isinstance(ctx, bool) or ctx <= 0):
            raise GGUFHeaderError(f"the header gives an invalid trained context ({ctx!r})")
        if ctx is not None and ctx > MAX_TRAINED_CONTEXT:
            raise GGUFHeaderError(
                f"the header claims a trained context of {ctx:,} tokens, which no model has "
                f"(the limit is {MAX_TRAINED_CONTEXT:,}): the file is damaged or was altered"
            )
        kv_per_token = self._tensors(tensors, values.get("general.alignment"))
        name = values.get("general.name")
        return GGUFHeader(
            version=version,
            architecture=arch,
            context_length=ctx,
            name=name if isinstance(name, str) else None,
            tensor_count=tensors,
            kv_bytes_per_token=kv_per_token,
            file_size=self.size,
        )

    def _tensors(self, count: int, alignment: Any) -> int | None:
        """Check each tensor's description against the file; the KV bytes per token."""
        align = alignment if isinstance(alignment, int) and not isinstance(alignment, bool) else 32
        if align <= 0 or align & (align - 1) or align > 1 << 20:
            raise GGUFHeaderError(f"the header is damaged (alignment {align!r})")
        kv_elements = 0
        ends: list[tuple[str, int]] = []
        for index in range(count):
            name = self._string(f"the name of tensor {index + 1}", MAX_TENSOR_NAME_BYTES).decode(
                "utf-8", errors="replace"
            )
            dims = int(self._unpack("I", f"the dimension count of {name!r}"))
            if not 1 <= dims <= MAX_DIMS:
                raise GGUFHeaderError(
                    f"the header is damaged (tensor {name!r} has {dims:,} dimensions)"
                )
            shape = [self._length(f"a dimension of {name!r}") for _ in range(dims)]
            kind = int(self._unpack("I", f"the type of {name!r}"))
            offset = int(self._unpack("Q", f"the offset of {name!r}"))
            elements = 1
            for n in shape:
                elements *= n
                if elements > self.size * 8:  # no type stores an element in under 1 bit
                    raise GGUFHeaderError(
                        f"the header is damaged (tensor {name!r} of shape {shape} is larger "
                        "than the file)"
                    )
            layout = _GGML_TYPES.get(kind)
            if layout is not None:
                block, block_bytes = layout
                if shape[0] % block:
                    raise GGUFHeaderError(
                        f"the header is damaged (tensor {name!r}: {shape[0]:,} is not a "
                        f"whole number of {block}-element blocks)"
                    )
                ends.append((name, offset + elements // block * block_bytes))
            else:
                ends.append((name, offset))
            if _ATTENTION.fullmatch(name) and len(shape) >= 2:
                kv_elements += shape[1] * (2 if name.endswith("qkv.weight") else 1)
        data_start = -(-self.pos // align) * align
        for name, end in ends:
            if data_start + end > self.size:
                raise GGUFHeaderError(
                    f"the file is cut short or damaged (the data of tensor {name!r} runs past "
                    "the end)"
                )
        return kv_elements * KV_ELEMENT_BYTES or None

    def _value(self, kind: int, key: str, depth: int) -> Any:
        if kind in _SCALARS:
            return self._unpack(_SCALARS[kind], f"the value of {key!r}")
        if kind == _STRING:
            n = self._length(f"the value of {key!r}")
            if n > MAX_TEXT_VALUE_BYTES:  # not needed whole: skipped, never read
                self._skip(n, f"the value of {key!r}")
                return None
            return self._read(n, f"the value of {key!r}").decode("utf-8", errors="replace")
        self._skip_value(kind, key, depth)
        return None

    def _skip_value(self, kind: int, key: str, depth: int) -> None:
        if kind in _SCALARS:
            self._skip(struct.calcsize(_SCALARS[kind]), f"the value of {key!r}")
        elif kind == _STRING:
            self._skip(self._length(f"the value of {key!r}"), f"the value of {key!r}")
        elif kind == _ARRAY:
            if depth >= MAX_ARRAY_DEPTH:
                raise GGUFHeaderError(f"the header is damaged ({key!r} nests arrays too deeply)")
            item = int(self._unpack("I", f"the array type of {key!r}"))
            count = self._length(f"the array length of {key!r}")
            if item in _SCALARS:
                self._skip(count * struct.calcsize(_SCALARS[item]), f"the array {key!r}")
            elif item == _STRING:
                if count * 8 > self.size - self.pos:  # each string has a length
                    raise _past_end(f"the array {key!r}")
                self._skip_strings(count, key)
            else:
                for _ in range(count):  # each costs bytes: a bad count ends at the file's end
                    self._skip_value(item, key, depth + 1)
        else:
            raise GGUFHeaderError(f"the header is damaged ({key!r} has unknown type {kind})")
