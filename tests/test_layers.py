"""The layering is declared as import-linter contracts in pyproject.toml (run by `make
lint`). These tests run the same contracts, check that they name every top-level module
of the package, and show that a broken rule fails the check."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "assistant"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root, capture_output=True, text=True, timeout=300,
    )


def _top_level_modules() -> set[str]:
    names = {p.stem for p in PKG.glob("*.py") if p.stem != "__init__"}
    names |= {p.parent.name for p in PKG.glob("*/__init__.py")}
    return {f"assistant.{n}" for n in names}


def test_the_contracts_hold() -> None:
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_every_top_level_module_has_a_layer() -> None:
    layered = {
        name.strip()
        for layer in _contracts()["layers"]["layers"]
        for name in layer.split("|")
    }
    assert layered == _top_level_modules()
    # Subfolders without __init__.py would be invisible to the check.
    for folder in PKG.iterdir():
        if folder.is_dir() and folder.name != "__pycache__":
            assert (folder / "__init__.py").is_file(), f"{folder.name}/ is not a package"


def test_qt_and_llama_cpp_rules_cover_every_other_module() -> None:
    contracts = _contracts()
    everything = _top_level_modules()
    qt_free = set(contracts["qt-only-in-ui"]["source_modules"])
    assert qt_free == everything - {
        "assistant.ui", "assistant.app", "assistant.smoke", "assistant.__main__"
    }
    assert set(contracts["llama-cpp-only-in-llm"]["source_modules"]) == everything - {
        "assistant.llm"
    }


def test_a_broken_rule_fails_the_check(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    shutil.copytree(PKG, copy / "assistant", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "bench", copy / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    prune = copy / "assistant" / "compaction" / "prune.py"
    prune.write_text(prune.read_text() + "\nimport PySide6.QtCore  # noqa\n")
    registry = copy / "assistant" / "llm" / "registry.py"
    registry.write_text(registry.read_text() + "\nimport assistant.agent.loop  # noqa\n")
    cli = copy / "assistant" / "cli" / "chat.py"
    cli.write_text(cli.read_text() + "\nimport llama_cpp  # noqa\n")
    store = copy / "assistant" / "sessions" / "store.py"
    store.write_text(store.read_text() + "\nimport assistant.compaction.branch  # noqa\n")
    replay = copy / "assistant" / "replay.py"
    replay.write_text(replay.read_text() + "\nimport bench.metrics  # noqa\n")
    proc = _lint(copy)
    assert proc.returncode == 1
    out = " ".join(proc.stdout.split())
    assert "4 broken" in out
    assert "assistant.sessions.store -> assistant.compaction.branch" in out
    assert "assistant.replay -> bench.metrics" in out
    assert "assistant.compaction.prune -> PySide6" in out
    assert "assistant.llm.registry -> assistant.agent.loop" in out
    assert "assistant.cli.chat -> llama_cpp" in out


def test_a_face_reaching_past_the_service_fails_the_check(tmp_path: Path) -> None:
    """``faces-through-the-service``: ``ui/`` and ``cli/`` import none of ``llm/``,
    ``sessions/``, ``compaction/``, ``agent/`` and ``engine`` themselves, in a module they
    have or in a new one; the same names through ``service/`` pass. The probe command's
    exception (it loads a model itself) covers ``llm/`` only."""
    copy = tmp_path / "project"
    shutil.copytree(PKG, copy / "assistant", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "bench", copy / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    plants = {
        "ui/main_window.py": "from assistant.llm.registry import Registry",
        "cli/chat.py": "import assistant.sessions.store",
        "cli/probe.py": "import assistant.compaction.tokens",
    }
    for name, line in plants.items():
        path = copy / "assistant" / name
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa\n")
    (copy / "assistant" / "ui" / "planted.py").write_text(
        '"""A new face module."""\n'
        "from assistant.agent.events import Notice  # noqa\n"
        "from assistant.engine import server_config  # noqa\n"
        "from assistant.service.values import TurnFinished  # noqa\n",
        encoding="utf-8",
    )
    proc = _lint(copy)
    out = " ".join(proc.stdout.split())
    assert proc.returncode == 1, out
    assert "1 broken" in out
    assert "use the session service, never the engine's parts BROKEN" in out
    for broken in ("assistant.ui.main_window -> assistant.llm.registry",
                   "assistant.cli.chat -> assistant.sessions.store",
                   "assistant.cli.probe -> assistant.compaction.tokens",
                   "assistant.ui.planted -> assistant.agent.events",
                   "assistant.ui.planted -> assistant.engine"):
        assert broken in out
    assert "-> assistant.service" not in out
