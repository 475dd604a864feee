"""Reading a GGUF file's header without loading the model.

The trained context length (``<architecture>.context_length``) is needed *before* llama.cpp
creates a context: asking for a larger window allocates its KV cache (a 131,072-token window
for a model trained on 8,192 made the first load of an unregistered file take 8x the
memory). :func:`read_header` walks the metadata key/value list of GGUF versions 1-3 in
either byte order and stops once it has what it needs; tensor data is never read.

The reader trusts nothing: every length is checked against the file size and fixed limits,
so a damaged or hostile header gives a :class:`GGUFHeaderError` with a clear reason, never a
huge allocation or a hang.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAGIC = b"GGUF"
#: Bounds that no real model comes near.
MAX_KEYS = 1_000_000
MAX_KEY_BYTES = 65_536
MAX_ARRAY_DEPTH = 4

# value type -> struct format of one scalar
_SCALARS = {
    0: "B",  # uint8
    1: "b",  # int8
    2: "H",  # uint16
    3: "h",  # int16
    4: "I",  # uint32
    5: "i",  # int32
    6: "f",  # float32
    7: "?",  # bool
    10: "Q",  # uint64
    11: "q",  # int64
    12: "d",  # float64
}
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


def read_header(path: Path) -> GGUFHeader:
    """The architecture and trained context length of the GGUF file at ``path``.

    Raises :class:`GGUFHeaderError` for a file that is not GGUF or whose header is damaged,
    and ``OSError`` when it cannot be read.
    """
    size = path.stat().st_size
    with path.open("rb") as fh:
        return _Reader(fh, size).header()


def trained_context(path: Path) -> int | None:
    """``read_header(path).context_length``, or None when the header cannot tell."""
    try:
        return read_header(path).context_length
    except (OSError, GGUFHeaderError):
        return None


class _Reader:
    def __init__(self, fh: IO[bytes], size: int) -> None:
        self.fh = fh
        self.size = size
        self.order = "<"
        self.version = 0

    # -- primitives ------------------------------------------------------------------------
    def _read(self, n: int, what: str) -> bytes:
        if n < 0 or self.fh.tell() + n > self.size:
            raise GGUFHeaderError(f"the header is cut short or damaged ({what} runs past the end)")
        data = self.fh.read(n)
        if len(data) != n:
            raise GGUFHeaderError(f"the header is cut short ({what})")
        return data

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
        if n < 0 or self.fh.tell() + n > self.size:
            raise GGUFHeaderError(f"the header is cut short or damaged ({what} runs past the end)")
        self.fh.seek(n, 1)

    # -- structure -------------------------------------------------------------------------
    def header(self) -> GGUFHeader:
        if self.size < 8 or self.fh.read(4) != MAGIC:
            raise GGUFHeaderError("it is not a GGUF model file (the first bytes are not 'GGUF')")
        raw_version = self._read(4, "the version")
        version = struct.unpack("<I", raw_version)[0]
        if version > 0xFFFF:  # written on a big-endian machine
            self.order = ">"
            version = struct.unpack(">I", raw_version)[0]
        if version not in (1, 2, 3):
            raise GGUFHeaderError(f"GGUF version {version} is not supported (1-3 are)")
        self.version = version
        self._length("the tensor count")
        keys = self._length("the key count")
        if keys > MAX_KEYS:
            raise GGUFHeaderError(f"the header is damaged (it claims {keys:,} metadata keys)")
        values: dict[str, Any] = {}
        wanted = {"general.architecture", "general.name"}
        for index in range(keys):
            key = self._string(f"metadata key {index + 1}", MAX_KEY_BYTES).decode(
                "utf-8", errors="replace"
            )
            kind = int(self._unpack("I", f"the type of {key!r}"))
            arch = values.get("general.architecture")
            if key in wanted or (isinstance(arch, str) and key == f"{arch}.context_length"):
                values[key] = self._value(kind, key, 0)
            else:
                self._skip_value(kind, key, 0)
            if isinstance(arch, str) and f"{arch}.context_length" in values:
                break
        arch = values.get("general.architecture")
        ctx = values.get(f"{arch}.context_length") if isinstance(arch, str) else None
        if ctx is not None and (not isinstance(ctx, int) or isinstance(ctx, bool) or ctx <= 0):
            raise GGUFHeaderError(f"the header gives an invalid trained context ({ctx!r})")
        name = values.get("general.name")
        return GGUFHeader(
            version=version,
            architecture=arch if isinstance(arch, str) else None,
            context_length=ctx,
            name=name if isinstance(name, str) else None,
        )

    def _value(self, kind: int, key: str, depth: int) -> Any:
        if kind in _SCALARS:
            return self._unpack(_SCALARS[kind], f"the value of {key!r}")
        if kind == _STRING:
            return self._string(f"the value of {key!r}").decode("utf-8", errors="replace")
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
                if count * 8 > self.size - self.fh.tell():  # each string has a length
                    raise GGUFHeaderError(
                        f"the header is cut short or damaged (the array {key!r} runs past "
                        "the end)"
                    )
                for _ in range(count):
                    self._skip(self._length(f"a string in {key!r}"), f"the array {key!r}")
            else:
                for _ in range(count):  # each costs bytes: a bad count ends at the file's end
                    self._skip_value(item, key, depth + 1)
        else:
            raise GGUFHeaderError(f"the header is damaged ({key!r} has unknown type {kind})")
