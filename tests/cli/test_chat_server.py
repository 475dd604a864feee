"""``assistant chat --server URL``: the terminal chat on a real llama-cpp-python server."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.local_server import LocalServer, free_port

pytestmark = pytest.mark.integration


def _chat(*args: str, text: str = "", timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("ASSISTANT_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "assistant", "chat", *args],
        input=text, capture_output=True, text=True, timeout=timeout, env=env,
    )


def test_chat_on_a_server(llama_server: LocalServer) -> None:
    model = os.path.basename(llama_server.model)
    proc = _chat("--server", llama_server.url + "/v1", "--server-model", model,
                 "--max-tokens", "16", text="What is the capital of France?\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    assert f"[server] llama-cpp-python server at {llama_server.url}" in proc.stderr
    assert "[server] Token counts: exact" in proc.stderr
    assert f"[model] {model}" in proc.stderr


def test_no_server_there_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    proc = _chat("--server", url, text="hello\n", timeout=120)
    assert proc.returncode == 1
    assert f"Cannot reach the server at {url}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_bad_address_is_refused_before_anything_runs() -> None:
    proc = _chat("--server", "localhost:8080", timeout=120)
    assert proc.returncode == 2
    assert "--server: the address must start with http:// or https://" in proc.stderr


def test_a_bad_window_is_refused_and_named_by_its_option() -> None:
    proc = _chat("--server", "http://127.0.0.1:8080", "--server-window", "-5", timeout=120)
    assert proc.returncode == 2
    assert "--server-window: Input should be greater than or equal to 0" in proc.stderr
    assert "Traceback" not in proc.stderr
