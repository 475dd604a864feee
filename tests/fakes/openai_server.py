"""A small OpenAI-compatible server on 127.0.0.1 whose replies a test scripts.

By default it lists one model at ``/v1/models``, answers 404 to everything else but
``/v1/chat/completions``, and streams there whatever ``reply(messages)`` returns (as one
content piece, or a list of pieces as one event each, then ``[DONE]``). The app takes it
for a generic OpenAI server: token counts are estimates and tool calls use the app's text
protocol, so a scripted reply can hold a fenced ``tool_call`` block. Each request's
messages are kept in ``requests``.

``models`` (the ``/v1/models`` entries), ``routes`` (more paths, by method and path),
``unknown`` (the answer to a path it lacks) and ``prompt_tokens`` (the prompt size its
replies report) make it stand in for a particular server: see tests/fakes/server_kinds.py.
Every request is kept in ``calls`` as (method, path, body).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Messages = list[dict[str, Any]]
MODEL = "scripted-model"

#: What a route answers: a status and a JSON body (a ``str`` body is sent as plain text).
Answer = tuple[int, Any]
#: A route: the request's JSON body (``{}`` for a GET) to the answer.
Route = Callable[[dict[str, Any]], Answer]
NOT_FOUND: Answer = (404, {"error": {"message": "not found"}})


def tool_call_text(name: str, arguments: dict[str, Any]) -> str:
    """A reply that calls ``name`` in the app's text protocol."""
    call = json.dumps({"name": name, "arguments": arguments})
    return f"```tool_call\n{call}\n```"


class FakeOpenAIServer:
    def __init__(
        self,
        reply: Callable[[Messages], str | list[str]],
        *,
        models: list[dict[str, Any]] | None = None,
        routes: dict[tuple[str, str], Route] | None = None,
        unknown: Callable[[str, str], Answer] = lambda method, path: NOT_FOUND,
        prompt_tokens: Callable[[dict[str, Any]], int] = lambda body: 10,
    ) -> None:
        self.reply = reply
        self.requests: list[Messages] = []
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        entries = models if models is not None else [{"id": MODEL}]
        self.routes: dict[tuple[str, str], Route] = {
            ("GET", "/v1/models"): lambda body: (200, {"object": "list", "data": entries}),
            **(routes or {}),
        }
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._route("GET", {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path == "/v1/chat/completions":
                    server.calls.append(("POST", self.path, body))
                    self._chat(body)
                else:
                    self._route("POST", body)

            def _route(self, method: str, body: dict[str, Any]) -> None:
                path = self.path.rstrip("/") or "/"
                server.calls.append((method, path, body))
                route = server.routes.get((method, path))
                self._json(*(route(body) if route else unknown(method, path)))

            def _chat(self, body: dict[str, Any]) -> None:
                messages = body.get("messages", [])
                server.requests.append(messages)
                answer = server.reply(messages)
                pieces = [answer] if isinstance(answer, str) else answer
                text = "".join(pieces)
                if not body.get("stream"):
                    usage = {"prompt_tokens": prompt_tokens(body), "completion_tokens": 1}
                    self._json(200, {"choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant",
                                                              "content": text}}],
                                     "usage": usage})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in (
                    *({"choices": [{"index": 0, "delta": {"role": "assistant", "content": p}}]}
                      for p in pieces),
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                ):
                    self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _json(self, status: int, data: Any) -> None:
                plain = isinstance(data, str)
                raw = data.encode() if plain else json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if plain else "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name="fake-openai-server",
        )

    def asked(self, method: str, path: str) -> list[dict[str, Any]]:
        """The bodies of the requests made to ``method path``, in order."""
        return [body for m, p, body in self.calls if (m, p) == (method, path)]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.server_close()


@contextmanager
def fake_openai_server(
    reply: Callable[[Messages], str | list[str]], **kind: Any
) -> Iterator[FakeOpenAIServer]:
    """The server, started; ``kind`` is passed on (``models``, ``routes``, ...)."""
    server = FakeOpenAIServer(reply, **kind)
    server.start()
    try:
        yield server
    finally:
        server.stop()
