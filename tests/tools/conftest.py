"""Fixtures for tool tests: a fresh workspace folder and a context to run tools in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.conversation import ToolCall
from assistant.llm.base import CancelToken
from assistant.tools import fsaccess
from assistant.tools.base import ToolContext, ToolLimits, ToolResult
from assistant.tools.registry import ToolRegistry
from assistant.tools.workspace import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)


@pytest.fixture
def ctx(ws: Workspace) -> ToolContext:
    return ToolContext(workspace=ws, limits=ToolLimits(), cancel=CancelToken())


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry.default()


class Runner:
    """``run("read_file", path="a.txt")`` through the registry, as the agent does."""

    def __init__(self, registry: ToolRegistry, ctx: ToolContext) -> None:
        self.registry = registry
        self.ctx = ctx

    def __call__(self, name: str, **arguments: Any) -> ToolResult:
        return self.registry.run(ToolCall(name=name, arguments=arguments), self.ctx)


@pytest.fixture
def run(registry: ToolRegistry, ctx: ToolContext) -> Runner:
    return Runner(registry, ctx)


@pytest.fixture(params=["descriptors", "path-fallback"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test with descriptors (POSIX) and with the path-string walk (no ``openat``)."""
    if request.param == "path-fallback":
        monkeypatch.setattr(fsaccess, "HAS_DIR_FD", False)
    yield str(request.param)
