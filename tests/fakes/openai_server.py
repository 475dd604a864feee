"""A small OpenAI-compatible server on 127.0.0.1 whose replies a test scripts.

It lists one model at ``/v1/models``, answers 404 to everything else but
``/v1/chat/completions``, and streams there whatever ``reply(messages)`` returns (as one
content piece, then ``[DONE]``). The app takes it for a generic OpenAI server: token
counts are estimates and tool calls use the app's text protocol, so a scripted reply can
hold a fenced ``tool_call`` block. Each request's messages are kept in ``requests``.
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


def tool_call_text(name: str, arguments: dict[str, Any]) -> str:
    """A reply that calls ``name`` in the app's text protocol."""
    call = json.dumps({"name": name, "arguments": arguments})
    return f"```tool_call\n{call}\n```"


class FakeOpenAIServer:
    def __init__(self, reply: Callable[[Messages], str]) -> None:
        self.reply = reply
        self.requests: list[Messages] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._json(200, {"object": "list", "data": [{"id": MODEL}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/v1/chat/completions":
                    self._json(404, {"error": {"message": "not found"}})
                    return
                messages = body.get("messages", [])
                server.requests.append(messages)
                text = server.reply(messages)
                if not body.get("stream"):
                    self._json(200, {"choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant",
                                                              "content": text}}],
                                     "usage": {"prompt_tokens": 10, "completion_tokens": 1}})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in (
                    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                ):
                    self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _json(self, status: int, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="fake-openai-server"
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.server_close()


@contextmanager
def fake_openai_server(reply: Callable[[Messages], str]) -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(reply)
    server.start()
    try:
        yield server
    finally:
        server.stop()
