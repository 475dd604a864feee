"""The text-boundary fuzz (issue 47, item 7), bounded: seeded random bytes and text with
invalid UTF-8, lone and split surrogates and control characters through standard input,
file names and contents, server events, model output and tool arguments of the real
terminal chat; then each chat is reopened, compacted and asked what it was told first.
0 broken chats, 0 tracebacks, 0 raw control characters on the terminal. The 1,000-per-
boundary run is ``python -m bench.fuzz_text`` (docs/BENCHMARKS.md)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench.fuzz_text import RAW, fuzz_bytes, fuzz_name, fuzz_text, pieces, run


@pytest.mark.parametrize(
    ("cases", "chats"), [(20, 1), pytest.param(200, 2, marks=pytest.mark.slow)]
)
def test_fuzzed_text_breaks_no_chat_and_reaches_no_terminal_raw(
    tmp_path: Path, cases: int, chats: int
) -> None:
    counts = run(seed=47, cases=cases, chats=chats, root=tmp_path)
    assert counts.broken == []
    assert counts.tracebacks == 0
    assert counts.raw == 0
    assert counts.cases["stdin"] == cases
    assert counts.cases["file names"] == cases
    for boundary in ("server events", "model output", "tool arguments"):
        assert counts.cases[boundary] >= cases // 4, counts.cases


def test_the_fuzz_makes_what_it_says() -> None:
    """The generators do make the hostile input the fuzz is about (else it proves nothing)."""
    rng = random.Random(47)
    data = b"".join(fuzz_bytes(rng) for _ in range(300))
    assert RAW.search(data) and b"\x1b[" in data and b"\xed\xa0\xbd" in data
    try:
        data.decode("utf-8")
        raise AssertionError("valid UTF-8 only")
    except UnicodeDecodeError:
        pass
    text = "".join(fuzz_text(rng) for _ in range(300))
    assert any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    events = pieces("a\U0001f600b", random.Random(1))
    assert "".join(events) == "a\ud83d\ude00b"
    names = [fuzz_name(rng) for _ in range(300)]
    assert all(b"/" not in n and b"\x00" not in n and n.strip(b".") for n in names)
    assert any(not _utf8(n) for n in names)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
