"""The catalog of models as the faces see it: the registry and the added GGUF files, what
is said about each (trained and measured context, tool use, base model), and installing,
adding and removing one. The Models window and Settings read it from here; the files and
the registry stay ``llm/``'s (the ``faces-through-the-service`` contract)."""

from __future__ import annotations

from assistant.llm.catalog import (
    CatalogModel,
    ModelFileError,
    add_model,
    install,
    list_models,
    model_name,
    remove_model,
)
from assistant.llm.context_probe import measured_line
from assistant.llm.gguf import trained_context as file_trained_context
from assistant.llm.registry import ModelEntry, Registry, model_path
from assistant.llm.server_probe import model_label
from assistant.llm.tool_score import score_line
from assistant.llm.transcript import BASE_MODEL_NOTE

__all__ = [
    "BASE_MODEL_NOTE",
    "CatalogModel",
    "ModelEntry",
    "ModelFileError",
    "Registry",
    "add_model",
    "file_trained_context",
    "install",
    "is_installed",
    "list_models",
    "measured_line",
    "model_label",
    "model_name",
    "remove_model",
    "score_line",
]


def is_installed(entry: ModelEntry) -> bool:
    """The registered model's file is on this computer."""
    return model_path(entry).is_file()
