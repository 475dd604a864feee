"""The model registry and model files: ``models/registry.json`` (a wheel carries a copy
beside this module, a frozen app a bundled one), each entry a file with its sha256, size,
licence and trained context; :func:`resolve_model` takes a registry name or any GGUF path.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from assistant import jsonlimits, paths


@dataclass(frozen=True)
class ModelEntry:
    name: str
    display_name: str
    file: str
    sha256: str
    size: int
    license: str
    context_length: int
    instruction_tuned: bool = True
    chat_template_source: str = "gguf"
    source: dict[str, Any] = field(default_factory=dict)
    #: Prompt-lookup decoding measured faster with this model (``bench --speculative``).
    prompt_lookup: bool = False
    #: The registered model measured to draft for this one faster, same output
    #: (``python -m bench --draft``; docs/PERFORMANCE.md, "Draft-model decoding").
    draft_model: str | None = None
    #: The prompt size it answers well from (answer benchmark, ``--answer-window N``).
    effective_context: int | None = None
    #: File tasks done of tasks tried by the tool-use probe on the project's machine
    #: (``python -m assistant probe --tools``, :mod:`assistant.llm.tool_score`).
    tool_score: tuple[int, int] | None = None
    #: What the model is good for, in a sentence (the welcome page and the models page).
    good_for: str = ""


#: Registry entries from their JSON form (checked: a wrong type is an error, not a crash later).
_ENTRY = TypeAdapter(ModelEntry)


@dataclass(frozen=True)
class Registry:
    #: The model the first run gives the user (``make run`` provisions it).
    default: str
    models: tuple[ModelEntry, ...]
    #: The smallest chat model: the test suite's and the quick benchmark runs' (fast on 2
    #: cores); the default when the registry names none.
    small: str = ""

    def get(self, name: str) -> ModelEntry | None:
        return next((entry for entry in self.models if entry.name == name), None)

    def by_file(self, filename: str) -> ModelEntry | None:
        return next((entry for entry in self.models if entry.file == filename), None)


def bundle_dir() -> Path | None:
    """The frozen app's bundled models folder, if running frozen."""
    base = getattr(sys, "_MEIPASS", None)
    return Path(base) / "models" if base else None


#: The registry's source in a checkout of the project (``models/`` beside ``assistant/``).
SOURCE_REGISTRY = Path(__file__).resolve().parents[2] / "models" / "registry.json"


def registry_text() -> str:
    """The frozen app's bundled registry, the wheel's package data, or the checkout's source."""
    bundled = bundle_dir()
    if bundled and (bundled / "registry.json").exists():
        return (bundled / "registry.json").read_text(encoding="utf-8")
    shipped = resources.files("assistant.llm").joinpath("registry.json")
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    return SOURCE_REGISTRY.read_text(encoding="utf-8")


def load_registry(path: Path | None = None) -> Registry:
    raw = jsonlimits.loads(
        path.read_text(encoding="utf-8") if path else registry_text(), "the model registry"
    )
    entries = tuple(
        _ENTRY.validate_python({"display_name": m["name"], **m}) for m in raw["models"]
    )
    return Registry(default=raw["default"], models=entries,
                    small=str(raw.get("small") or raw["default"]))


def model_path(entry: ModelEntry) -> Path:
    """Where ``entry``'s file is: bundled with a frozen app, else the user model dir."""
    bundled = bundle_dir()
    if bundled and (bundled / entry.file).exists():
        return bundled / entry.file
    return paths.model_dir() / entry.file


def default_model_path() -> Path:
    reg = load_registry()
    entry = reg.get(reg.default)
    assert entry is not None, "registry default names no model"
    return model_path(entry)


def small_model_path() -> Path:
    """The smallest chat model's file (the tests' and quick benchmark runs' model)."""
    reg = load_registry()
    entry = reg.get(reg.small)
    assert entry is not None, "registry small names no model"
    return model_path(entry)


def resolve_model(name_or_path: str) -> tuple[Path, ModelEntry | None]:
    """A registry name or a file path -> (path, registry entry if the file is known)."""
    reg = load_registry()
    entry = reg.get(name_or_path)
    if entry is not None:
        return model_path(entry), entry
    path = Path(name_or_path).expanduser()
    return path, reg.by_file(path.name)


def registered_context(name_or_path: str) -> int | None:
    """The registry's trained context for a model (None: not registered or unreadable)."""
    try:
        entry = resolve_model(name_or_path)[1]
    except (OSError, ValueError, KeyError):
        return None
    return entry.context_length if entry is not None else None
