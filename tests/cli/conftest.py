"""The terminal chat runs in a subprocess here: its settings file names the small model,
as the suite's Settings() do (tests/conftest.py), so it does not load the first-run model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.config import Settings, save_settings
from assistant.llm.registry import load_registry


@pytest.fixture(autouse=True)
def _small_model_settings(_isolated_home: Path) -> Iterator[None]:
    save_settings(Settings(model=load_registry().small))
    yield
