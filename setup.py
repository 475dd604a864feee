"""Build hook: the wheel carries the model registry as package data.

The registry's source is ``models/registry.json`` at the top of the project (beside a card per
registered model); a build copies it into the package as ``assistant/llm/registry.json``,
where an installed app reads it. A checkout (an editable install) reads ``models/`` directly.
Everything else about the package is declared in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

REGISTRY = Path(__file__).resolve().parent / "models" / "registry.json"


class BuildWithRegistry(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "assistant" / "llm" / "registry.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REGISTRY, target)


setup(cmdclass={"build_py": BuildWithRegistry})
