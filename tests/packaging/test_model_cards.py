"""models/ holds the registry's source and a card per registered model that agrees with it."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


def _registry() -> dict[str, object]:
    return json.loads((MODELS / "registry.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_every_registered_model_has_a_card_that_agrees_with_the_registry() -> None:
    registry = _registry()
    entries = registry["models"]
    assert isinstance(entries, list) and entries
    index = (MODELS / "README.md").read_text(encoding="utf-8")
    for entry in entries:
        card = (MODELS / f"{entry['name']}.md").read_text(encoding="utf-8")
        assert f"({entry['name']}.md)" in index
        assert f"`{entry['name']}`" in card
        assert f"`{entry['file']}`" in card
        assert f"`{entry['sha256']}`" in card
        assert f"{entry['size']:,} bytes" in card
        assert f"| licence | {entry['license']} |" in card
        assert f"| trained context | {entry['context_length']:,} tokens |" in card
        assert f"`{entry['source']['package']}` {entry['source']['version']}" in card
        if entry.get("tool_score"):
            passed, total = entry["tool_score"]
            assert f"| tool use | {passed} of {total} file tasks" in card
        measured = card.split("## Measured", 1)[1]
        table = [line for line in measured.splitlines() if line.startswith("|")]
        rows = [line for line in table[1:] if not set(line) <= set("|-: ")]  # no header/rule
        assert any("prefill" in row for row in rows), f"{entry['name']}: no measured prefill"
        assert any("effective context" in row for row in rows), (
            f"{entry['name']}: no measured effective context"
        )


def test_the_package_reads_the_registry_from_models() -> None:
    from assistant.llm.registry import SOURCE_REGISTRY, load_registry

    assert SOURCE_REGISTRY == MODELS / "registry.json"
    names = [m.name for m in load_registry().models]
    assert names == [m["name"] for m in _registry()["models"]]  # type: ignore[union-attr, index]
