"""The layering rule: Qt only in ui/ (and the composition root), llama_cpp only in llm/,
and lower layers never import higher ones."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "assistant"

#: Which top-level subpackages each layer may import (besides itself and the shared
#: modules config, conversation, paths).
ALLOWED = {
    "llm": set(),
    "sessions": {"llm", "compaction"},
    "compaction": {"llm"},
    "tools": {"llm"},
    "agent": {"llm", "compaction", "tools"},
    "bench": {"llm", "compaction", "tools", "agent", "sessions"},
    "cli": {"llm", "compaction", "tools", "agent", "sessions", "ui"},
}
LAYERS = {"llm", "sessions", "compaction", "tools", "agent", "ui", "bench", "cli", "app"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_layering(path: Path) -> None:
    rel = path.relative_to(PKG)
    layer = rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else rel.stem
    for name in _imports(path):
        top = name.split(".")[0]
        if top == "PySide6":
            assert layer in {"ui", "app"}, f"{rel} imports PySide6 outside ui/"
        if top == "llama_cpp":
            assert layer == "llm", f"{rel} imports llama_cpp outside llm/"
        if top == "assistant" and "." in name:
            target = name.split(".")[1]
            if target not in LAYERS or target == layer:
                continue
            if layer in ALLOWED:
                assert target in ALLOWED[layer], f"{rel} ({layer}) must not import {name}"
            if layer in {"config", "conversation", "paths"}:
                pytest.fail(f"{rel} is a shared base module and must not import {name}")
