"""The ``Llama`` object's internals and the backend's private parts are read only in
``assistant/llm/llama_*.py`` (issue 27): everything else, the benchmark included, goes
through public methods (``LlamaBackend.raw_prefill``, ``use_abort_callback``, the probe)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: A private attribute of another object: ``backend._llm``, ``llm._ctx``, ``x._prefill(``
#: (``self._model`` of a class's own field is not one).
REACH_IN = re.compile(r"(?<!self)\.(_llm|_ctx|_model|_prefill|_batch|_abort)\b")


def reaching_in(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if REACH_IN.search(line)]


def test_only_the_llama_modules_read_llama_internals() -> None:
    found: dict[str, list[str]] = {}
    for folder in ("assistant", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("assistant/llm/llama_"):
                continue
            lines = reaching_in(path.read_text(encoding="utf-8"))
            if lines:
                found[rel] = lines
    assert found == {}


def test_the_check_finds_a_reach_in() -> None:
    assert reaching_in("rate = measure(backend._llm, config)\nself._model = name\n") == [
        "rate = measure(backend._llm, config)"
    ]
    assert reaching_in("plan = backend._prefill(tokens, None, None)")
