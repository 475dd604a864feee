"""assistant/compaction stays pure policy (no Qt, no llama_cpp) and keeps its inner shape."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import assistant.compaction
from tests.test_layers import ROOT, _lint

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


def test_the_inner_shape_is_held_and_a_broken_rule_fails(tmp_path: Path) -> None:
    """The sub-layer contracts of pyproject.toml (``compaction-layers``, ``summary-layers``,
    ``summary-entry-point``) name each kind of break: a primitive reaching up into the
    summary, a summary part reaching up into the compactor, a part reaching up inside
    summary/, and code outside summary/ importing one of its parts instead of its entry
    point."""
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "assistant", copy / "assistant",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "bench", copy / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    assert _lint(copy).returncode == 0
    breaks = {
        "compaction/tokens.py": "import assistant.compaction.summary",
        "compaction/summary/clean.py": "import assistant.compaction.compactor",
        "compaction/summary/prompts.py": "import assistant.compaction.summary.validate",
        "compaction/controller.py": "import assistant.compaction.summary.grammar",
    }
    for name, line in breaks.items():
        path = copy / "assistant" / name
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa\n")
    proc = _lint(copy)
    out = " ".join(proc.stdout.split())
    assert proc.returncode == 1, out
    assert "3 broken" in out  # the two layer contracts and the entry point
    assert "assistant.compaction.tokens -> assistant.compaction.summary" in out
    assert "assistant.compaction.summary.clean -> assistant.compaction.compactor" in out
    assert ("assistant.compaction.summary.prompts -> assistant.compaction.summary.validate"
            in out)
    assert "assistant.compaction.controller -> assistant.compaction.summary.grammar" in out
