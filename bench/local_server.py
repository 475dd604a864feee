"""Start and stop llama-cpp-python's OpenAI-compatible server on this machine (loopback),
or llama.cpp's ``llama-server`` binary when one is given.

The benchmark (``python -m bench --engine server``) runs the same model through it
to measure what the HTTP path costs, and the server engine's tests run against it. The
server is a child process (``python -m llama_cpp.server``) listening on 127.0.0.1 at a free
port; its output goes to a log file; :meth:`LocalServer.stop` ends it (terminate, then kill)
and always runs when the ``with`` block is left, or at the latest when this process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

from assistant.llm.base import LLMError

HOST = "127.0.0.1"

#: Where ``make llama-server`` puts llama.cpp's server in a checkout
#: (packaging/build-llama-server.sh).
CHECKOUT_LLAMA_SERVER = Path(__file__).resolve().parents[1] / "build/llama-server/llama-server"


def find_llama_server() -> str | None:
    """llama.cpp's ``llama-server`` binary: ``ASSISTANT_LLAMA_SERVER``, else the one
    ``make llama-server`` built into this checkout, else one on PATH; None when there is none."""
    given = os.environ.get("ASSISTANT_LLAMA_SERVER")
    if given:
        return given
    if CHECKOUT_LLAMA_SERVER.is_file() and os.access(CHECKOUT_LLAMA_SERVER, os.X_OK):
        return str(CHECKOUT_LLAMA_SERVER)
    return shutil.which("llama-server")


def free_port() -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """``python -m llama_cpp.server`` serving ``model`` on ``http://127.0.0.1:PORT``."""

    def __init__(
        self,
        model: str | Path,
        *,
        n_ctx: int = 2048,
        threads: int = 0,
        port: int = 0,
        log_path: Path | None = None,
        api_key: str | None = None,
        extra_args: tuple[str, ...] = (),
        start_timeout_s: float = 180.0,
        llama_server_bin: str | None = None,
    ) -> None:
        """``llama_server_bin``: run llama.cpp's own ``llama-server`` binary instead of
        llama-cpp-python's server (one slot, ``--jinja`` chat templates)."""
        self.model = Path(model)
        self.n_ctx = n_ctx
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.port = port or free_port()
        self.log_path = log_path
        self.api_key = api_key
        self.extra_args = extra_args
        self.start_timeout_s = start_timeout_s
        self.llama_server_bin = llama_server_bin
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: object | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def command(self) -> list[str]:
        if self.llama_server_bin:
            cmd = [
                self.llama_server_bin, "-m", str(self.model), "--host", HOST,
                "--port", str(self.port), "-c", str(self.n_ctx), "-np", "1",
                "-t", str(self.threads), "--jinja",
            ]
            if self.api_key:
                cmd += ["--api-key", self.api_key]
            return cmd + list(self.extra_args)
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model),
            "--host", HOST, "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
        ]
        if self.api_key:
            cmd += ["--api_key", self.api_key]
        return cmd + list(self.extra_args)

    def start(self) -> LocalServer:
        """Start the server and wait until it lists its model (raises ``LLMError``)."""
        if not self.model.is_file():
            raise LLMError(f"no model file at {self.model}")
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self._log = out
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the log shows what happened, at once
        self._proc = subprocess.Popen(
            self.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env,
        )
        atexit.register(self.stop)  # also when the owner forgets, or exits on an error
        deadline = time.monotonic() + self.start_timeout_s
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        with httpx.Client(trust_env=False, timeout=5.0, headers=headers) as client:
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    code = self._proc.returncode
                    self.stop()
                    raise LLMError(f"the local server exited with code {code} while starting"
                                   + (f" (log: {self.log_path})" if self.log_path else ""))
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{self.url}/v1/models").status_code == 200:
                        return self
                time.sleep(0.2)
        self.stop()
        raise LLMError(f"the local server did not start within {self.start_timeout_s:g} s")

    def kill(self) -> None:
        """End the server at once (SIGKILL): a server that goes away mid-reply."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            self._proc.wait(timeout=30)

    def stop(self) -> None:
        """End the server: terminate, and kill it if it has not exited after 10 s."""
        atexit.unregister(self.stop)
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
        log = self._log
        if log is not None and hasattr(log, "close"):
            log.close()
        self._log = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
