"""What the welcome page says about the models: which are here, what each does well, and
whether it uses the file tools (its tool-use score, :mod:`assistant.llm.tool_score`)."""

from __future__ import annotations

from dataclasses import dataclass

from assistant.llm.catalog import list_models
from assistant.llm.registry import load_registry
from assistant.llm.tool_score import score_of_file


@dataclass(frozen=True)
class GuideLine:
    name: str
    good_for: str
    #: Whether it is offered the tools (None: not measured).
    tools: bool | None
    installed: bool
    current: bool


def model_guide(current: str) -> list[GuideLine]:
    """Every registered model and every added one, the one in use (``current``, a setting's
    model key) first, then installed ones, then the rest."""
    try:
        models = list_models(load_registry())
    except (OSError, ValueError, KeyError):
        return []
    lines = []
    for model in models:
        score = score_of_file(model.path, model.size) if model.size else None
        lines.append(GuideLine(
            name=model.display_name, good_for=model.good_for,
            tools=None if score is None else score.offers_tools,
            installed=model.installed, current=model.key == current,
        ))
    return sorted(lines, key=lambda line: (not line.current, not line.installed))


def guide_text(line: GuideLine) -> str:
    """One line for a person: the name, in use or not installed, what it does well, and
    whether it works with files unless that says so already (the welcome page said "Give it
    a file with /read. Cannot use the file tools: give it a file with /read.")."""
    state = " (in use)" if line.current else "" if line.installed else " (not installed)"
    said = "file" in line.good_for.lower() or "/read" in line.good_for
    tools = "" if said else {True: "Reads, finds and changes files for you.",
                             False: "Cannot use the file tools: give it a file with /read.",
                             None: ""}[line.tools]
    words = " ".join(part for part in (line.good_for, tools) if part)
    return f"{line.name}{state}: {words}" if words else f"{line.name}{state}"
