"""assistant/compaction stays pure policy: no Qt, no llama_cpp."""

from __future__ import annotations

import ast
from pathlib import Path

import assistant.compaction

FORBIDDEN = ("PySide6", "llama_cpp", "assistant.ui", "assistant.agent", "assistant.llm.llama")


def test_no_forbidden_imports() -> None:
    root = Path(assistant.compaction.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert len(files) >= 10
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{path.name} needs a module docstring"
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith(FORBIDDEN), f"{path.name} imports {name}"
