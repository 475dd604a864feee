"""Finding llama.cpp's ``llama-server`` for the engine tests and the benchmark."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import local_server
from bench.local_server import find_llama_server


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_variable_wins_then_the_checkout_build_then_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = tmp_path / "checkout" / "build" / "llama-server" / "llama-server"
    on_path = _exe(tmp_path / "bin" / "llama-server")
    monkeypatch.setattr(local_server, "CHECKOUT_LLAMA_SERVER", built)
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.delenv("ASSISTANT_LLAMA_SERVER", raising=False)
    assert find_llama_server() == str(on_path)
    _exe(built)
    assert find_llama_server() == str(built)
    monkeypatch.setenv("ASSISTANT_LLAMA_SERVER", "/opt/llama/llama-server")
    assert find_llama_server() == "/opt/llama/llama-server"


def test_none_when_there_is_no_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_server, "CHECKOUT_LLAMA_SERVER", tmp_path / "missing")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ASSISTANT_LLAMA_SERVER", raising=False)
    assert find_llama_server() is None
    # A file that is not executable is not taken for the binary.
    (tmp_path / "missing").write_text("")
    assert not os.access(tmp_path / "missing", os.X_OK)
    assert find_llama_server() is None


def test_the_checkout_path_is_where_make_puts_it() -> None:
    root = Path(__file__).resolve().parents[2]
    assert root / "build" / "llama-server" / "llama-server" == local_server.CHECKOUT_LLAMA_SERVER
    assert "build/llama-server/llama-server" in (root / "Makefile").read_text()
