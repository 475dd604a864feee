"""HTTP to one OpenAI-compatible server: JSON requests, streamed replies, errors that name
the address; a "context exceeded" answer is a :class:`~assistant.llm.base.ContextOverflowError`
(docs/ARCHITECTURE.md, "The server engine").
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable, Iterator
from contextlib import suppress
from typing import Any

import httpx

from assistant import jsonlimits
from assistant.llm.base import CancelToken, ContextOverflowError, LLMError
from assistant.llm.server_limits import (
    LimitExceeded,
    TooLarge,
    Watch,
    bounded_body,
    bounded_lines,
    socket_of_stream,
)

CONNECT_TIMEOUT_S = 5.0
#: The longest one request may take, a whole streamed reply included.
REPLY_DEADLINE_S = 1800.0
#: The longest line of a streamed reply (one event; a token or a tool call's piece).
MAX_LINE_BYTES = 4 << 20
#: The largest streamed reply and the largest plain JSON answer.
MAX_REPLY_BYTES = 64 << 20
MAX_BODY_BYTES = 32 << 20
#: The most events in one streamed reply (the backend passes a bound from max_tokens).
MAX_EVENTS = 1_000_000


class ServerError(LLMError):
    """The server could not be used; the message names its address."""

    def __init__(self, url: str, message: str) -> None:
        self.url = url
        super().__init__(message)


class ServerUnreachable(ServerError):
    """Nothing answers at the address (refused, unknown host, network down)."""


class ServerTimeout(ServerError):
    """The server did not answer (or send the next piece) in time."""


class ServerHTTPError(ServerError):
    """The server answered with an HTTP error status."""

    def __init__(self, url: str, message: str, status: int, detail: str) -> None:
        super().__init__(url, message)
        self.status = status
        self.detail = detail


class ServerStreamError(ServerError):
    """A streamed reply broke off or could not be read."""


class ServerReplyTooLarge(ServerStreamError):
    """The server sent more than the limits allow (a line, the reply, the events)."""


# -- "context exceeded" ------------------------------------------------------------------------

# OpenAI, vLLM, llama-cpp-python: "This model's maximum context length is 512 tokens.
# However, you requested 739 tokens (731 in the messages, 8 in the completion)."
_OPENAI_STYLE = re.compile(
    r"maximum context length is (\d+) tokens.*?(?:requested|request has|you have) (\d+)",
    re.IGNORECASE | re.DOTALL,
)
_IN_MESSAGES = re.compile(r"\((\d+) in (?:the messages|your prompt)", re.IGNORECASE)
# llama.cpp's server: "request (9412 tokens) exceeds the available context size (8192 tokens)"
_LLAMA_SERVER = re.compile(
    r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)",
    re.IGNORECASE,
)
_OVERFLOW_WORDS = re.compile(
    r"context[ _](?:length|size|window)|exceed_context|maximum context|n_ctx|too many tokens"
    r"|prompt is too long|context overflow",
    re.IGNORECASE,
)


def overflow_from(status: int, body: Any, message: str) -> ContextOverflowError | None:
    """The overflow an HTTP 400/413 answer reports (sizes from llama.cpp's fields or the
    message, 0 when absent), or None."""
    if status not in (400, 413):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    fields = error if isinstance(error, dict) else {}
    code = str(fields.get("code", "")) + " " + str(fields.get("type", ""))
    if not (_OVERFLOW_WORDS.search(message) or _OVERFLOW_WORDS.search(code)):
        return None
    prompt, window = 0, 0
    if isinstance(fields.get("n_prompt_tokens"), int) and isinstance(fields.get("n_ctx"), int):
        prompt, window = int(fields["n_prompt_tokens"]), int(fields["n_ctx"])
    elif m := _LLAMA_SERVER.search(message):
        prompt, window = int(m.group(1)), int(m.group(2))
    elif m := _OPENAI_STYLE.search(message):
        window, prompt = int(m.group(1)), int(m.group(2))
        if inner := _IN_MESSAGES.search(message):  # the prompt alone, without the reply
            prompt = int(inner.group(1))
    return ContextOverflowError(prompt, window, detail=f"the server said: {message}")


def error_message(body: Any, text: str) -> str:
    """The server's own words from an error answer (OpenAI, FastAPI and plain shapes)."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        for key in ("error", "detail", "message"):
            if isinstance(body.get(key), str):
                return str(body[key])
    text = " ".join(text.split())
    return text[:300] if text else "no message"


# -- the client --------------------------------------------------------------------------------


class ServerHTTP:
    """A connection to one server (thread-safe for requests; one stream at a time).
    ``timeout_s``: the longest wait for the next piece; ``reply_deadline_s``: for a request."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 300.0,
        reply_deadline_s: float = REPLY_DEADLINE_S,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.timeout_s = timeout_s
        self.reply_deadline_s = reply_deadline_s
        self.max_line_bytes = max_line_bytes
        self.max_reply_bytes = max_reply_bytes
        self.max_body_bytes = max_body_bytes
        common: dict[str, Any] = {
            "base_url": self.base_url,
            "headers": headers,
            "timeout": httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s)),
            "trust_env": False,  # no proxy or .netrc from the environment: only this address
            "follow_redirects": False,
        }
        self._client = httpx.Client(**common)
        # Streams get a connection of their own each time, so the deadline watch learns its
        # socket as it is made and can end a wait for the reply's first bytes too.
        self._stream_client = httpx.Client(
            **common, limits=httpx.Limits(max_keepalive_connections=0)
        )

    # -- plain requests -----------------------------------------------------------------
    def get(self, path: str) -> Any:
        return self._json(self._send("GET", path), path)

    def post(self, path: str, body: dict[str, Any], *, timeout_s: float | None = None) -> Any:
        return self._json(self._send("POST", path, body, timeout_s), path)

    def try_request(self, path: str, body: dict[str, Any] | None = None) -> Any | None:
        """GET (POST with ``body``), or None when the server does not have ``path`` or
        refuses the body (a 4xx but 401/403, or an answer that is not JSON)."""
        try:
            return self.get(path) if body is None else self.post(path, body)
        except ServerHTTPError as exc:
            if 400 <= exc.status < 500 and exc.status not in (401, 403):
                return None
            raise
        except ServerStreamError:
            return None

    def _timeout(self, watch: Watch, timeout_s: float | None = None) -> httpx.Timeout:
        """Per-read timeouts that never reach past the request's deadline."""
        left = max(0.01, watch.remaining())
        per_read = min(timeout_s if timeout_s is not None else self.timeout_s, left)
        return httpx.Timeout(per_read, connect=min(CONNECT_TIMEOUT_S, per_read))

    def _open(
        self, client: httpx.Client, watch: Watch, method: str, path: str,
        timeout_s: float | None = None, **kwargs: Any,
    ) -> httpx.Response:
        """Send, with the connection's socket watched; once more when the connection broke
        before any answer (a kept-alive one the server had just closed is found so only on
        use): nothing ran twice."""

        def send() -> httpx.Response:
            request = client.build_request(
                method, path, timeout=self._timeout(watch, timeout_s),
                extensions={"trace": watch.trace}, **kwargs,
            )
            return client.send(request, stream=True)

        try:
            response = send()
        except httpx.RemoteProtocolError as exc:
            if "without sending a response" not in str(exc) or watch.fired:
                raise
            response = send()
        except (httpx.ReadError, httpx.WriteError):
            if watch.fired:
                raise
            response = send()
        if (sock := _socket_of(response)) is not None:
            watch.attach(sock)
        return response

    def _send(
        self, method: str, path: str, body: dict[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> bytes:
        """The answer's bytes (at most ``max_body_bytes``, within the deadline)."""
        watch = Watch(self.reply_deadline_s)
        response = self._answered(self._client, watch, method, path, timeout_s, json=body)
        try:
            return bounded_body(response.iter_bytes(), watch, max_total=self.max_body_bytes)
        except (httpx.HTTPError, LimitExceeded) as exc:
            raise self._transport_error(exc, watch) from exc
        finally:
            response.close()
            watch.stop()

    def _answered(
        self, client: httpx.Client, watch: Watch, method: str, path: str,
        timeout_s: float | None = None, **kwargs: Any,
    ) -> httpx.Response:
        """:meth:`_open`, with a failure or an error status raised (the watch stopped)."""
        try:
            response = self._open(client, watch, method, path, timeout_s, **kwargs)
        except httpx.HTTPError as exc:
            watch.stop()
            raise self._transport_error(exc, watch) from exc
        if response.status_code < 400:
            return response
        try:
            text = bounded_body(
                response.iter_bytes(), watch, max_total=min(self.max_body_bytes, 1 << 20)
            ).decode("utf-8", errors="replace")
        except (httpx.HTTPError, LimitExceeded):
            text = ""
        finally:
            response.close()
            watch.stop()
        raise self._status_error(response.status_code, text, path)

    def _json(self, content: bytes, path: str) -> Any:
        try:
            return jsonlimits.loads(content, f"the server's answer to {path}")
        except ValueError as exc:
            raise ServerStreamError(
                self.base_url,
                f"The server at {self.base_url} sent something that is not JSON for {path}.",
            ) from exc

    # -- streams ------------------------------------------------------------------------
    def stream(
        self, path: str, body: dict[str, Any], cancel: CancelToken | None = None,
        *, max_events: int = MAX_EVENTS,
    ) -> SSEStream:
        """Open a streamed POST (HTTP errors raised here, before any event); close the stream
        or read it to the end."""
        watch = Watch(self.reply_deadline_s, cancel)
        response = self._answered(
            self._stream_client, watch, "POST", path, json=body,
            headers={"Accept": "text/event-stream", "Accept-Encoding": "identity"},
        )
        return SSEStream(self, response, watch, max_events)

    # -- errors -------------------------------------------------------------------------
    def _transport_error(
        self, exc: httpx.HTTPError | LimitExceeded, watch: Watch | None = None
    ) -> ServerError:
        """What a failed request or an answer past the limits is, for the user."""
        url = self.base_url
        if isinstance(exc, TooLarge):
            return ServerReplyTooLarge(
                url, f"The server at {url} sent too much: {exc}; the answer was stopped and "
                "not used."
            )
        if watch is not None and watch.expired:
            return self._deadline_error(watch)
        if isinstance(exc, httpx.TimeoutException):
            if isinstance(exc, httpx.ConnectTimeout):
                return ServerTimeout(url, f"The server at {url} did not accept the connection "
                                          "in time. Check the address and that it is running.")
            if watch is not None and watch.remaining() <= 0.05:
                return self._deadline_error(watch)
            return ServerTimeout(
                url, f"The server at {url} did not answer within {self.timeout_s:g} s "
                "(the timeout is in Settings, Engine)."
            )
        if isinstance(exc, httpx.ConnectError):
            reason = _short_reason(exc)
            return ServerUnreachable(
                url, f"Cannot reach the server at {url} ({reason}). Is it running, and is the "
                "address right?"
            )
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            return ServerStreamError(
                url, f"The connection to the server at {url} broke ({_short_reason(exc)})."
            )
        return ServerError(url, f"Request to the server at {url} failed: {_short_reason(exc)}")

    def _deadline_error(self, watch: Watch) -> ServerTimeout:
        url = self.base_url
        return ServerTimeout(
            url, f"The server at {url} did not finish its answer within "
            f"{watch.deadline_s:g} s (the longest a reply may take); it was stopped."
        )

    def _status_error(self, status: int, text: str, path: str) -> LLMError:
        body: Any = None
        with suppress(ValueError):
            body = jsonlimits.loads(text, "the server's error") if text else None
        message = error_message(body, text)
        overflow = overflow_from(status, body, message)
        if overflow is not None:
            return overflow
        url = self.base_url
        if status in (401, 403):
            said = f"The server at {url} refused the request ({status}: {message}). Check the "
            return ServerHTTPError(url, said + "API key in Settings, Engine.", status, message)
        return ServerHTTPError(
            url, f"The server at {url} answered {status} to {path}: {message}", status, message
        )

    def close(self) -> None:
        self._client.close()
        self._stream_client.close()


def _short_reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text or "ECONNREFUSED" in text:
        return "connection refused"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host name"
    return text.splitlines()[0][:200]


class SSEStream:
    """The events of one streamed answer, as decoded JSON objects, until ``[DONE]``
    (:attr:`done`); :attr:`cancelled` when Stop closed the request."""

    def __init__(
        self, http: ServerHTTP, response: httpx.Response, watch: Watch, max_events: int
    ) -> None:
        self._http = http
        self._response = response
        self._watch: Watch | None = watch
        self._max_events = max_events
        self.done = False
        self.events_seen = 0
        self.cancelled = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        http = self._http
        url = http.base_url
        watch = self._watch
        assert watch is not None, "a stream is read once"
        lines = bounded_lines(
            self._response.iter_bytes(), watch,
            max_line=http.max_line_bytes, max_total=http.max_reply_bytes,
        )
        try:
            for data in _sse_data(line.decode("utf-8", errors="replace") for line in lines):
                if data.strip() == "[DONE]":
                    self.done = True
                    return
                self.events_seen += 1
                if self.events_seen > self._max_events:
                    raise ServerReplyTooLarge(
                        url, f"The server at {url} sent more than {self._max_events:,} pieces "
                        "of reply; the answer was stopped."
                    )
                try:
                    event = jsonlimits.loads(data, "a piece of the server's reply")
                except ValueError as exc:
                    raise ServerStreamError(
                        url, f"The server at {url} sent a piece of the reply that is not JSON."
                    ) from exc
                if isinstance(event, dict):
                    yield event
        except (httpx.HTTPError, LimitExceeded) as exc:
            if watch.cancelled:
                self.cancelled = True
                return
            raise http._transport_error(exc, watch) from exc
        finally:
            self.close()
        if watch.cancelled:
            self.cancelled = True
        elif watch.expired:  # the socket was shut as the stream ended
            raise http._deadline_error(watch)

    def close(self) -> None:
        watch = self._watch
        if watch is not None:
            watch.stop()
            if watch.cancelled:
                self.cancelled = True
        with suppress(Exception):
            self._response.close()


def _sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The ``data`` of each server-sent event (comments such as pings are skipped)."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def _socket_of(response: httpx.Response) -> socket.socket | None:
    return socket_of_stream(response.extensions.get("network_stream"))
