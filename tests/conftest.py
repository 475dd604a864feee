"""Shared fixtures.

Every test runs with ``ASSISTANT_HOME`` pointing at a fresh temporary folder, so no test
touches a real user's settings, chats or workspace. The embedded model is found where
``make test`` provisioned it (the real user model dir) before that redirection.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant import config
from assistant.llm.registry import load_registry, small_model_path
from bench.local_server import LocalServer

EMBEDDED_MODEL: Path = small_model_path()
#: The product's first-run model, before the suite pins the small one (``_isolated_home``).
PRODUCT_DEFAULT_MODEL: str = config.DEFAULT_MODEL
os.environ.setdefault("ASSISTANT_MODEL_DIR", str(EMBEDDED_MODEL.parent))

#: The xdist group of the real-model tests (``make test`` runs ``-n 2 --dist loadgroup``).
REAL_MODEL_GROUP = "real-model"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put every ``integration`` test in one xdist group, so under ``--dist loadgroup`` one
    worker runs them one after another (each uses both cores, and some measure under that
    assumption) while the other worker runs the unit tests beside them. A test that shares a
    module-scoped fixture with an integration test joins the group, so the fixture (a built
    wheel, a started server) is made once. Without xdist the mark does nothing."""
    shared: set[tuple[str, str]] = set()
    for item in items:
        if item.get_closest_marker("integration") is not None:
            shared.update((item.nodeid.split("::")[0], name) for name in _module_fixtures(item))
    for item in items:
        module = item.nodeid.split("::")[0]
        if item.get_closest_marker("integration") is not None or any(
            (module, name) in shared for name in _module_fixtures(item)
        ):
            item.add_marker(pytest.mark.xdist_group(REAL_MODEL_GROUP))


class _GroupIdShim:
    """pytest-xdist 3.8 tells its loadgroup scheduler a test's group by appending "@group" to
    ``item._nodeid``, which pytest 9.2 no longer reads (node ids are structured, ``item._id``):
    the groups were silently ignored (pytest-dev/pytest-xdist#1386). This carries the suffix
    over after xdist's hook; it does nothing where xdist did not rename a test."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            legacy = getattr(item, "_nodeid", None)
            structured = getattr(item, "_id", None)
            if isinstance(legacy, str) and structured is not None and legacy != str(structured):
                item._id = type(structured).parse(legacy)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_GroupIdShim(), "xdist-group-id-shim")
    # PySide6 6.12 on Python 3.11 takes a reference from None with each Qt call: a long run
    # of widget tests aborts the interpreter unless guarded before the first one, as the
    # app guards itself (assistant/ui/none_guard.py).
    from assistant.ui.none_guard import protect_none

    protect_none()


def _module_fixtures(item: pytest.Item) -> list[str]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [name for name, defs in info.name2fixturedefs.items()
            if defs and defs[-1].scope in ("module", "class", "package")]


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("ASSISTANT_HOME", str(home))
    monkeypatch.setenv("ASSISTANT_MODEL_DIR", str(EMBEDDED_MODEL.parent))
    # Prefill calibration measures for seconds on a model's first load in a fresh cache
    # folder, i.e. in every test; its own tests turn it back on.
    monkeypatch.setenv("ASSISTANT_CALIBRATE", "0")
    # Settings() load the small model in tests (fast on 2 cores); the first run's default
    # is tested where it matters (tests/test_config.py).
    monkeypatch.setattr("assistant.config.DEFAULT_MODEL", load_registry().small)
    monkeypatch.delenv("ASSISTANT_DISABLE_PRUNE", raising=False)
    monkeypatch.delenv("ASSISTANT_DISABLE_AUTOCOMPACT", raising=False)
    yield home


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves a thread of its own running (QThreads included)."""
    before = set(threading.enumerate())
    yield
    deadline = 5.0
    leaked: list[threading.Thread] = []
    for t in set(threading.enumerate()) - before:
        if t.daemon and t.name.startswith(("asyncio", "pydevd")):
            continue
        t.join(timeout=deadline)
        if t.is_alive():
            leaked.append(t)
    assert not leaked, f"test left threads running: {[t.name for t in leaked]}"


@pytest.fixture(scope="session")
def embedded_model_path() -> Path:
    if not EMBEDDED_MODEL.exists():
        pytest.fail(
            f"embedded model missing at {EMBEDDED_MODEL}; run `make test` (it provisions it)"
        )
    return EMBEDDED_MODEL


@pytest.fixture(scope="session")
def real_backend(embedded_model_path: Path) -> Iterator[object]:
    """One loaded embedded model shared by the integration tests (loading takes ~0.5 s,
    but each test resetting the KV cache keeps them independent)."""
    from assistant.llm.llama_backend import LlamaBackend

    backend = LlamaBackend.load(str(embedded_model_path), n_ctx=8192)
    yield backend
    backend.close()


#: The context size of the shared llama-cpp-python server (small: every test stays cheap).
SERVER_CTX = 1024


@pytest.fixture(scope="session")
def llama_server(
    embedded_model_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalServer]:
    """llama-cpp-python's OpenAI-compatible server with the embedded model on 127.0.0.1
    (a real process, started once; its log is ``llama_server.log_path``). Two threads, a
    1,024-token window: the tests using it stay within seconds of work each."""
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    server = LocalServer(embedded_model_path, n_ctx=SERVER_CTX, threads=2, log_path=log)
    server.start()
    try:
        yield server
    finally:
        server.stop()
