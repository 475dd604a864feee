"""The wheel: ``pip install .`` gives a working assistant without the source tree.

The wheel is built from this checkout, checked to carry the model registry as package data,
and installed (without dependencies) into a fresh virtual environment. The dependencies
(llama-cpp-python takes ten minutes to compile) come from the test's own environment through
a path file that adds only its site-packages folder: the editable install of the source tree
there is a ``.pth`` hook that a plain path entry does not run, and the commands run from an
empty folder, so nothing can import ``assistant`` from the source tree.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "DISPLAY"}}
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, **kw
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the project (the build writes beside its sources)."""
    src = tmp_path_factory.mktemp("src")
    shutil.copytree(ROOT / "assistant", src / "assistant",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "models", src / "models")
    for name in ("pyproject.toml", "README.md", "setup.py"):
        shutil.copy(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("wheel")
    proc = _run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(src)],
        cwd=out,
    )
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("offline_assistant-*.whl")
    return built


@pytest.fixture(scope="module")
def fresh_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the wheel installed and the test environment's dependencies."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    proc = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent)
    assert proc.returncode == 0, proc.stderr
    python = venv / "bin" / "python"
    proc = _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", str(wheel)],
        cwd=venv.parent,
    )
    assert proc.returncode == 0, proc.stderr
    purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        cwd=venv.parent,
    ).stdout.strip()
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib) / "test-deps.pth").write_text("\n".join(deps) + "\n", encoding="utf-8")
    return python


def test_the_wheel_carries_the_registry(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert "assistant/llm/registry.json" in names
        shipped = json.loads(zf.read("assistant/llm/registry.json"))
    source = json.loads((ROOT / "models" / "registry.json").read_text())
    assert shipped == source
    assert not any(n.endswith(".gguf") for n in names)


def test_installed_app_finds_its_registry_and_provisions(
    fresh_python: Path, tmp_path: Path
) -> None:
    where = _run(
        [str(fresh_python), "-c",
         "import assistant, assistant.llm.registry as r; print(assistant.__file__); "
         "print(r.load_registry().small)"],
        cwd=tmp_path,
    )
    assert where.returncode == 0, where.stderr
    location, default = where.stdout.split()
    assert Path(location).is_relative_to(fresh_python.parent.parent)
    assert default == "smollm2-135m-instruct"
    # The model directory holds the verified model: provision checks it, downloads nothing.
    # (Through the installed console script.)
    script = fresh_python.parent / "offline-assistant"
    proc = _run([str(script), "provision"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = _run([str(fresh_python), "-m", "assistant", "provision", "no-such-model"], cwd=tmp_path)
    assert proc.returncode == 2 and "smollm2-135m-instruct" in proc.stderr


@pytest.mark.integration
def test_installed_app_chats_with_the_model(fresh_python: Path, tmp_path: Path) -> None:
    """The installed package loads a provisioned model and answers. The tests' small model:
    what is checked is the package, and the first-run Qwen2.5-Coder 1.5B, offered the tools,
    once answered this question with a read_file call cut at 24 tokens (a sampled reply at
    temperature 0.2; 6 of 6 runs here said "Paris")."""
    proc = _run(
        [str(fresh_python), "-m", "assistant", "chat", "--model", "smollm2-135m-instruct",
         "--max-tokens", "24"],
        cwd=tmp_path,
        input="What is the capital of France?\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert "Paris" in proc.stdout
