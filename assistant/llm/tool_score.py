"""How well a model uses the tools, as measured by the tool-use probe, and whether it is
offered them.

The probe (:mod:`assistant.tool_probe`, ``python -m assistant probe --tools``) runs a fixed
set of small file tasks and keeps its result here, in the cache folder, by model identity
(the registry's sha256, else file name and size). A registered model also carries the score
measured on the project's machine (``tool_score`` in ``models/registry.json``), so the first
run knows it without the minutes a probe takes. A model that scored below
:data:`MIN_TOOL_SHARE` is offered no tools: it answers from the chat, and the user is told
once how to give it a file (``/read``) and which models can use tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from assistant import paths
from assistant.atomicfile import JsonStore
from assistant.llm.base import ModelInfo
from assistant.llm.context_probe import file_model_id
from assistant.llm.registry import ModelEntry, load_registry

#: Share of the probe's tasks a model must finish to be offered tools.
MIN_TOOL_SHARE = 0.5


@dataclass
class ToolScore:
    """One probe run: tasks finished of tasks tried, and each task's outcome."""

    model: str
    passed: int
    total: int
    measured: str
    seconds: float = 0.0
    #: Per task: name, passed, why (what was wrong), calls made.
    tasks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def offers_tools(self) -> bool:
        return self.total > 0 and self.share >= MIN_TOOL_SHARE - 1e-9

    def describe(self) -> str:
        """``5 of 6 file tasks done (measured 2026-12-07)``."""
        when = f" (measured {self.measured[:10]})" if self.measured else ""
        return f"{self.passed} of {self.total} file tasks done{when}"


_JSON = TypeAdapter(ToolScore)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ToolScoreStore(JsonStore):
    """Probe results in one JSON file (``tool_use.json`` in the cache folder)."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(path or paths.cache_dir() / "tool_use.json")

    def get(self, model: str) -> ToolScore | None:
        return self.get_as(model, _JSON)

    def put(self, result: ToolScore) -> None:
        self.put_json(result.model, _JSON.dump_python(result, mode="json"))


def registry_score(entry: ModelEntry | None) -> ToolScore | None:
    """The score the registry lists for a model (measured on the project's machine)."""
    if entry is None or entry.tool_score is None:
        return None
    passed, total = entry.tool_score
    return ToolScore(model=f"sha256:{entry.sha256}", passed=passed, total=total, measured="")


def score_of_file(file: Path, size: int, store: ToolScoreStore | None = None) -> ToolScore | None:
    """The newest known score of a model file: this machine's probe, else the registry's."""
    model = file_model_id(file.name, size)
    found = (store or ToolScoreStore()).get(model)
    if found is not None:
        return found
    try:
        entry = load_registry().by_file(file.name)
    except (OSError, ValueError, KeyError):
        return None
    return registry_score(entry if entry is not None and entry.size == size else None)


def score_of(info: ModelInfo, store: ToolScoreStore | None = None) -> ToolScore | None:
    """The loaded model's score (None: never measured; a server's model is not probed)."""
    if not info.path:
        return None
    return score_of_file(Path(info.path), info.size_bytes, store)


def offers_tools(info: ModelInfo, store: ToolScoreStore | None = None) -> bool:
    """Whether the model is offered the tools: yes unless it was measured failing them."""
    score = score_of(info, store)
    return score is None or score.offers_tools


def score_line(file: Path, size: int, store: ToolScoreStore | None = None) -> str:
    """What Settings and the models page say about a model file's tool use."""
    score = score_of_file(file, size, store)
    if score is None:
        return "Tool use not measured yet (Measure tool use runs a few small file tasks)."
    verdict = "uses the file tools" if score.offers_tools else (
        "is offered no tools: it answers from the chat, and /read shows it a file"
    )
    return f"Tool use: {score.describe()}; {verdict}."
