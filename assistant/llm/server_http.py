"""HTTP to one OpenAI-compatible server: JSON requests, streamed replies, clear errors.

Every request goes to the base URL the user set and nowhere else: no proxy from the
environment, no redirects followed. Failures become :class:`ServerError` subclasses whose
message names the address (connection refused, timeout, an HTTP error with the server's own
message), except a "context exceeded" answer, which is a
:class:`~assistant.llm.base.ContextOverflowError` carrying the numbers the server gave
(:func:`overflow_from`), so compaction and the single retry work as with the embedded model.

A streamed reply (:meth:`ServerHTTP.stream`) is read as server-sent events. Stop closes the
request: while the stream is open a small watcher thread checks the cancel token and shuts
the socket down, which ends a read that is waiting for the server (a long prompt being
evaluated sends nothing for a while) and tells the server the client has gone.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from typing import Any

import httpx

from assistant.llm.base import CancelToken, ContextOverflowError, LLMError

CONNECT_TIMEOUT_S = 5.0
#: How often the watcher looks at the cancel token while a reply streams.
CANCEL_POLL_S = 0.05


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
    """The overflow an error answer reports, or None when it reports something else.

    Only HTTP 400 and 413 count; the prompt size and the window are read from the fields
    llama.cpp sends (``n_prompt_tokens``, ``n_ctx``) or from the message (0 when absent).
    """
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
    """A connection to one server (thread-safe for requests; one stream at a time)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 300.0,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.timeout_s = timeout_s
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(connect_timeout_s, timeout_s)),
            trust_env=False,  # no proxy or .netrc from the environment: only this address
            follow_redirects=False,
        )

    # -- plain requests -----------------------------------------------------------------
    def get(self, path: str) -> Any:
        return self._json(self._send("GET", path), path)

    def post(self, path: str, body: dict[str, Any], *, timeout_s: float | None = None) -> Any:
        return self._json(self._send("POST", path, body, timeout_s), path)

    def try_get(self, path: str) -> Any | None:
        """GET, or None when the server does not have ``path`` (any 4xx but 401/403)."""
        try:
            return self.get(path)
        except ServerHTTPError as exc:
            if 400 <= exc.status < 500 and exc.status not in (401, 403):
                return None
            raise
        except ServerStreamError:  # an answer that is not JSON: not the endpoint we meant
            return None

    def try_post(self, path: str, body: dict[str, Any]) -> Any | None:
        """POST, or None when the server does not have ``path`` or refuses the body."""
        try:
            return self.post(path, body)
        except ServerHTTPError as exc:
            if 400 <= exc.status < 500 and exc.status not in (401, 403):
                return None
            raise
        except ServerStreamError:
            return None

    def _send(
        self, method: str, path: str, body: dict[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> httpx.Response:
        kwargs: dict[str, Any] = {} if body is None else {"json": body}
        if timeout_s is not None:
            kwargs["timeout"] = httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))
        try:
            response = self._with_retry(lambda: self._client.request(method, path, **kwargs))
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc
        if response.status_code >= 400:
            raise self._status_error(response.status_code, response.text, path)
        return response

    @staticmethod
    def _with_retry(send: Callable[[], httpx.Response]) -> httpx.Response:
        """Send; once more when the connection broke before any answer came back: a kept-alive
        connection the server had just closed (idle for a few seconds, or after a failed
        request) is found closed or reset only on use. Nothing was answered, so nothing ran
        twice."""
        try:
            return send()
        except httpx.RemoteProtocolError as exc:
            if "without sending a response" not in str(exc):
                raise
        except (httpx.ReadError, httpx.WriteError):
            pass
        return send()

    def _json(self, response: httpx.Response, path: str) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise ServerStreamError(
                self.base_url,
                f"The server at {self.base_url} sent something that is not JSON for {path}.",
            ) from exc

    # -- streams ------------------------------------------------------------------------
    def stream(
        self, path: str, body: dict[str, Any], cancel: CancelToken | None = None
    ) -> SSEStream:
        """Open a streamed POST; HTTP errors (an overflow too) are raised here, before any
        event. Close the returned stream (or read it to the end)."""
        def send() -> httpx.Response:
            request = self._client.build_request("POST", path, json=body)
            return self._client.send(request, stream=True)

        try:
            response = self._with_retry(send)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc
        if response.status_code >= 400:
            try:
                text = response.read().decode("utf-8", errors="replace")
            except httpx.HTTPError:
                text = ""
            finally:
                response.close()
            raise self._status_error(response.status_code, text, path)
        return SSEStream(self, response, cancel)

    # -- errors -------------------------------------------------------------------------
    def _transport_error(self, exc: httpx.HTTPError) -> ServerError:
        url = self.base_url
        if isinstance(exc, httpx.TimeoutException):
            if isinstance(exc, httpx.ConnectTimeout):
                return ServerTimeout(url, f"The server at {url} did not accept the connection "
                                          "in time. Check the address and that it is running.")
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

    def _status_error(self, status: int, text: str, path: str) -> LLMError:
        body: Any = None
        with suppress(ValueError):
            body = json.loads(text) if text else None
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


def _short_reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text or "ECONNREFUSED" in text:
        return "connection refused"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host name"
    return text.splitlines()[0][:200]


class SSEStream:
    """The events of one streamed answer, as decoded JSON objects, until ``[DONE]``.

    :attr:`done` is True once ``[DONE]`` arrived; :attr:`events_seen` counts the events;
    :attr:`cancelled` is True when Stop closed the request.
    """

    def __init__(self, http: ServerHTTP, response: httpx.Response, cancel: CancelToken | None):
        self._http = http
        self._response = response
        self._cancel = cancel
        self.done = False
        self.events_seen = 0
        self.cancelled = False
        self._watcher: _CancelWatcher | None = None
        if cancel is not None:
            sock = _socket_of(response)
            if sock is not None:
                self._watcher = _CancelWatcher(cancel, sock)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        url = self._http.base_url
        try:
            for data in _sse_data(self._response.iter_lines()):
                if data.strip() == "[DONE]":
                    self.done = True
                    return
                try:
                    event = json.loads(data)
                except ValueError as exc:
                    raise ServerStreamError(
                        url, f"The server at {url} sent a piece of the reply that is not JSON."
                    ) from exc
                self.events_seen += 1
                if isinstance(event, dict):
                    yield event
        except httpx.HTTPError as exc:
            if self._cancel is not None and self._cancel.cancelled:
                self.cancelled = True
                return
            raise self._http._transport_error(exc) from exc
        finally:
            self.close()
        if self._cancel is not None and self._cancel.cancelled:
            self.cancelled = True

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            if self._watcher.fired:
                self.cancelled = True
            self._watcher = None
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
    stream = response.extensions.get("network_stream")
    if stream is None:
        return None
    try:
        sock = stream.get_extra_info("socket")
    except Exception:
        return None
    return sock if isinstance(sock, socket.socket) else None


class _CancelWatcher:
    """Shuts the socket down when the cancel token fires (ends a blocked read at once)."""

    def __init__(self, cancel: CancelToken, sock: socket.socket) -> None:
        self._cancel = cancel
        self._sock = sock
        self._stop = threading.Event()
        self.fired = False
        self._thread = threading.Thread(target=self._run, name="server-stop-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(CANCEL_POLL_S):
            if self._cancel.cancelled:
                self.fired = True
                with suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RDWR)
                return

    def stop(self) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)
