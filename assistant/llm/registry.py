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
    instruction_tuned: bool
    chat_template_source: str
    source: dict[str, Any] = field(default_factory=dict)
    #: Prompt-lookup decoding measured faster with this model (``bench --speculative``).
    prompt_lookup: bool = False
    #: The prompt size it answers well from (answer benchmark, ``--answer-window N``).
    effective_context: int | None = None


@dataclass(frozen=True)
class Registry:
    default: str
    models: tuple[ModelEntry, ...]

    def get(self, name: str) -> ModelEntry | None:
        return next((entry for entry in self.models if entry.name == name), None)

    def by_file(self, filename: str) -> ModelEntry | None:
        return next((entry for entry in self.models if entry.file == filename), None)


def bundle_dir() -> Path | None:
    """The frozen app's bundled models folder, if running frozen."""
    base = getattr(sys, "_MEIPASS", None)
    return Path(base) / "models" if base else None


def registry_path() -> Path | None:
    """The frozen app's bundled registry; None: the package's own (:func:`registry_text`)."""
    bundled = bundle_dir()
    if bundled and (bundled / "registry.json").exists():
        return bundled / "registry.json"
    return None


#: The registry's source in a checkout of the project (``models/`` beside ``assistant/``).
SOURCE_REGISTRY = Path(__file__).resolve().parents[2] / "models" / "registry.json"


def registry_text() -> str:
    """The bundled registry, the wheel's package data, or the checkout's source."""
    path = registry_path()
    if path is not None:
        return path.read_text(encoding="utf-8")
    shipped = resources.files("assistant.llm").joinpath("registry.json")
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    return SOURCE_REGISTRY.read_text(encoding="utf-8")


def load_registry(path: Path | None = None) -> Registry:
    raw = jsonlimits.loads(
        path.read_text(encoding="utf-8") if path else registry_text(), "the model registry"
    )
    entries = tuple(
        ModelEntry(
            name=m["name"],
            display_name=m.get("display_name", m["name"]),
            file=m["file"],
            sha256=m["sha256"],
            size=int(m["size"]),
            license=m["license"],
            context_length=int(m["context_length"]),
            instruction_tuned=bool(m.get("instruction_tuned", True)),
            chat_template_source=m.get("chat_template_source", "gguf"),
            source=m.get("source", {}),
            prompt_lookup=bool(m.get("prompt_lookup", False)),
            effective_context=int(m["effective_context"]) if m.get("effective_context") else None,
        )
        for m in raw["models"]
    )
    return Registry(default=raw["default"], models=entries)


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
