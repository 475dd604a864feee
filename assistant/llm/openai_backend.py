"""The server engine: a model behind an OpenAI-compatible server, as an ``LLMBackend`` that
works like the embedded one for everything above ``llm/`` (docs/ARCHITECTURE.md, "The server
engine"). ``cache_prompt`` keeps llama.cpp's KV cache warm (each prompt extends the last), and
the window an overflow answer names is adopted so the compaction that follows aims at it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assistant.llm.base import (
    CancelToken,
    ChatMessages,
    ContextOverflowError,
    EncodedPrompt,
    GenerationOptions,
    GenerationResult,
    ModelInfo,
    StreamEvent,
    WarmResult,
)
from assistant.llm.server_counting import Counting, choose_counting, verify_counting
from assistant.llm.server_http import (
    REPLY_DEADLINE_S,
    ServerError,
    ServerHTTP,
    ServerStreamError,
    error_message,
    overflow_from,
)
from assistant.llm.server_probe import ServerProfile, model_label, probe
from assistant.llm.server_reply import StreamedReply
from assistant.llm.template import ChatTemplate, unlabeled

log = logging.getLogger(__name__)

ToolCallMode = Literal["auto", "native", "text"]
#: llama.cpp-family servers take the embedded engine's sampler settings too, so both
#: engines sample alike (see ``llama_backend._SAMPLER``).
LLAMA_SAMPLER: dict[str, Any] = {"top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1}
#: llama.cpp's own ``llama-server`` feeds every prompt token into its sampler before the
#: reply (``init_sampler`` in tools/server/server-context.cpp), so its repeat-penalty
#: window (64 tokens by default) starts on the end of the prompt: recall's excerpts and the
#: question, the very tokens an answer copies. llama-cpp-python penalizes only the tokens
#: it samples. Over the last 8 tokens the penalty covers the chat template's tail and the
#: reply's own latest tokens (docs/BENCHMARKS.md, engines side by side: W1 2/12 -> 6/12,
#: W2 6/12 -> 8/12; a penalty of 1.0 answered the same and leaves loops unchecked).
LLAMA_SERVER_SAMPLER: dict[str, Any] = {**LLAMA_SAMPLER, "repeat_last_n": 8}
LLAMA_FAMILY = ("llama.cpp", "llama-cpp-python")


@dataclass(frozen=True)
class ServerConfig:
    """What the composition root gives :meth:`ServerBackend.connect` (from the settings)."""

    base_url: str
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    #: A GGUF whose tokenizer and template count prompts when the server cannot.
    tokenizer_gguf: str = ""
    #: The context window; 0 takes the server's, else ``fallback_window``.
    window: int = 0
    fallback_window: int = 10_000
    tool_calls: ToolCallMode = "auto"
    #: ``tool_choice`` with native tool calls: "auto" (the app), or "required" (the model
    #: must call a tool; tests use it to check the calls that come back).
    tool_choice: str = "auto"
    timeout_s: float = 300.0
    #: The longest one reply may take, start to end (pings and drips do not extend it).
    reply_deadline_s: float = REPLY_DEADLINE_S
    #: Check the counts against the server's prompt sizes (three one-token requests).
    verify: bool = True
    seed: int | None = None
    #: llama.cpp's ``n_cache_reuse`` per request (tokens; 0: not sent): the server moves
    #: cached runs of at least this many tokens past text removed before them (a recall
    #: block the next question no longer has) instead of evaluating them again. The
    #: embedded engine's chunk reuse setting, approximate in the same way.
    cache_reuse: int = 0
    #: The sampler fields sent to a llama.cpp-family server (None: the app's,
    #: :data:`LLAMA_SERVER_SAMPLER` or :data:`LLAMA_SAMPLER`; the benchmark's front-end
    #: baseline sends its own).
    sampler: dict[str, Any] | None = None


@dataclass(frozen=True)
class ConnectionReport:
    """What the connection test shows, and what the app will use."""

    url: str
    server: str
    model: str
    models: tuple[str, ...]
    window: int
    window_source: str
    exact_counts: bool
    counting: str
    native_tools: bool
    notes: tuple[str, ...] = ()
    #: The window the server named (or the setting gave); 0 when neither did, and
    #: ``window`` is then the mode's.
    known_window: int = 0

    def lines(self) -> list[str]:
        counts = "exact" if self.exact_counts else "estimates"
        out = [
            f"{self.server} at {self.url}",
            f"Model: {self.model}" + (f" (of {len(self.models)})" if len(self.models) > 1 else ""),
            f"Window: {self.window:,} tokens ({self.window_source})",
            f"Token counts: {counts}: {self.counting}",
            "Tool calls: " + ("the server's native tool calls" if self.native_tools
                              else "the app's text protocol"),
        ]
        return out + list(self.notes)


class ServerBackend:
    """One model on one server. Create with :meth:`connect`; use from one thread at a time
    (the model worker), like the embedded backend."""

    def __init__(
        self,
        http: ServerHTTP,
        config: ServerConfig,
        profile: ServerProfile,
        counting: Counting,
        template: ChatTemplate,
    ) -> None:
        self._http = http
        self._config = config
        self.profile = profile
        self._counting = counting
        self._template = template
        #: How the counts were checked against the server (the connection test shows it).
        self._verification = ""
        auto = config.tool_calls == "auto"
        self._native = profile.native_tools if auto else config.tool_calls == "native"
        if config.window:
            self._window, self._window_source = config.window, "setting"
        elif profile.window:
            self._window, self._window_source = profile.window, profile.window_source
        else:
            self._window, self._window_source = 0, ""
        #: The last prompt sent and the reply to it (the KV-cache reuse estimate).
        self._last_sent = ""
        self.name = f"{model_label(profile.model)} ({counting.description})"

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def connect(
        cls, config: ServerConfig, on_progress: Callable[[float], None] | None = None
    ) -> ServerBackend:
        """Probe the server, choose the counting, check it. Raises ``LLMError`` subclasses
        (:class:`~.server_http.ServerError` naming the address, or ``ModelLoadError`` for a
        named GGUF that cannot be read)."""
        http = ServerHTTP(
            config.base_url, config.api_key, timeout_s=config.timeout_s,
            reply_deadline_s=config.reply_deadline_s,
        )
        try:
            profile = probe(http, config.model)
            if on_progress:
                on_progress(0.3)
            counting, template = choose_counting(http, profile, config.tokenizer_gguf)
            backend = cls(http, config, profile, counting, template)
            if on_progress:
                on_progress(0.5)
            backend._verify()
        except BaseException:
            http.close()
            raise
        return backend

    def _verify(self) -> None:
        counting = self._counting
        if not self._config.verify or not counting.exact:
            self._verification = "" if counting.exact else "not checked: an estimate"
            return
        self._verification = verify_counting(counting, self._server_prompt_size, self._wire)

    def _server_prompt_size(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> int | None:
        body = self._body(messages, tools, GenerationOptions(max_tokens=1, temperature=0.0))
        answer = self._one_token(body)
        usage = answer.get("usage") if isinstance(answer, dict) else None
        size = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        return int(size) if isinstance(size, int) else None

    # -- what it is -----------------------------------------------------------------------
    @property
    def window(self) -> int:
        """The window in force: the setting, the server's, or the one an overflow named."""
        return self._window or self._config.fallback_window

    @property
    def info(self) -> ModelInfo:
        known = self._window
        return ModelInfo(
            name=model_label(self.profile.model),
            path=f"{self.profile.base_url}#{self.profile.model}",
            trained_context=known,
            context_window=known or self._config.fallback_window,
            architecture=self.profile.kind,
            chat_template_source=(
                "server" if self._counting.description.startswith("the server's /apply")
                else self._template.origin
            ),
            supports_native_tools=self._native,
            tool_result_tag=self._template.result_tag,
            extra={
                "engine": "server",
                "url": self.profile.base_url,
                "server": self.profile.kind_name,
                "model_id": self.profile.model,
                "counting": self._counting.description,
                "window_source": self._window_source or "not reported (the mode's window)",
            },
            exact_counts=self._counting.exact,
        )

    def report(self) -> ConnectionReport:
        counting = self._counting.description
        if self._verification:
            counting += f"; {self._verification}"
        return ConnectionReport(
            url=self.profile.base_url,
            server=self.profile.kind_name + (f" {self.profile.version}"
                                             if self.profile.version else ""),
            model=self.profile.model,
            models=self.profile.models,
            window=self.window,
            window_source=self._window_source or "the server does not say; the mode's window "
            "is used until the server names its own",
            exact_counts=self._counting.exact,
            counting=counting,
            native_tools=self._native,
            notes=self.profile.notes,
            known_window=self._window,
        )

    # -- counting -------------------------------------------------------------------------
    def _wire(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """The messages and tools as sent: unchanged with native tool calls, else adapted to
        the text protocol by the model's template (tools then live in the system message)."""
        if self._native:
            return unlabeled(messages), list(tools) if tools else None
        return self._template.adapt(messages, tools), None

    def tokenize(self, text: str) -> list[int]:
        return self._counting.tokenize_prompt(text)

    def count(self, text: str) -> int:
        return self._counting.count_text(text)

    def render_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> str:
        return self._counting.render(*self._wire(messages, tools))

    def count_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        return self._counting.count(*self._wire(messages, tools))

    def encode_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> EncodedPrompt:
        """The count only: the server tokenizes what it is sent, and rendering here (an
        HTTP call for a server that renders) is left to the call that needs the text."""
        return EncodedPrompt(count=self.count_prompt(messages, tools))

    # -- generation -----------------------------------------------------------------------
    def _body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        options: GenerationOptions,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.profile.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": max(1, options.max_tokens),
            "temperature": options.temperature,
            "top_p": options.top_p,
        }
        if options.stop:
            body["stop"] = list(options.stop)[:4]
        if tools:
            body["tools"] = tools
            # "auto" is the OpenAI default; llama-cpp-python needs it said.
            body["tool_choice"] = self._config.tool_choice
        kind = self.profile.kind
        if kind in LLAMA_FAMILY:
            ours = LLAMA_SERVER_SAMPLER if kind == "llama.cpp" else LLAMA_SAMPLER
            body.update(ours if self._config.sampler is None else self._config.sampler)
            if self._config.seed is not None:
                body["seed"] = self._config.seed
        if kind == "llama.cpp":
            body["cache_prompt"] = True  # reuse the KV cache of the previous request
            body["return_progress"] = True
            if self._config.cache_reuse > 0:
                body["n_cache_reuse"] = self._config.cache_reuse
        if options.grammar is not None and kind in LLAMA_FAMILY:
            body["grammar"] = options.grammar
        return body

    def generate(
        self,
        messages: ChatMessages,
        options: GenerationOptions,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
        on_prefill: Callable[[int, int], None] | None = None,
        prompt: EncodedPrompt | None = None,
    ) -> Iterator[StreamEvent]:
        """Open the request now (errors, an overflow too, are raised here) and stream it.
        ``prompt`` (counted by the controller) saves counting the messages again."""
        sent, sent_tools = self._wire(messages, tools)
        if prompt is not None:
            prompt_tokens = prompt.count
        else:
            prompt_tokens = self._counting.count(sent, sent_tools)
        if self._counting.exact and self._window and prompt_tokens >= self._window:
            raise ContextOverflowError(prompt_tokens, self._window)
        body = self._body(sent, sent_tools, options)
        ignored = ("grammar",) if options.grammar is not None and "grammar" not in body else ()
        start = time.perf_counter()
        try:
            stream = self._http.stream(
                "/v1/chat/completions", body, cancel, max_events=_most_events(body)
            )
        except ContextOverflowError as exc:
            raise self._learned(exc, prompt_tokens) from None
        rendered = prompt.text if prompt is not None and prompt.text is not None else None
        if rendered is None:
            try:
                rendered = self._counting.render(sent, sent_tools)
            except (ServerError, ValueError):  # only the reuse estimate needs it
                rendered = ""

        def events() -> Iterator[StreamEvent]:
            reply = StreamedReply()
            first: float | None = None
            try:
                for event in stream:
                    if isinstance(event.get("error"), dict | str):
                        raise self._stream_error(event, prompt_tokens)
                    shown, started = reply.feed(event)
                    if on_prefill is not None and reply.progress is not None:
                        on_prefill(*reply.progress)
                    if started and first is None:
                        first = time.perf_counter() - start
                    if shown:
                        yield StreamEvent(delta=shown)
            finally:
                stream.close()
            end = time.perf_counter()
            cancelled = stream.cancelled or (cancel is not None and cancel.cancelled)
            if not cancelled and not stream.done and reply.finish is None:
                if stream.events_seen == 0:
                    self._diagnose_empty(body, prompt_tokens)
                raise ServerStreamError(
                    self._http.base_url,
                    f"The server at {self._http.base_url} stopped sending the reply before it "
                    "was finished.",
                )
            total_prompt = reply.prompt_tokens(prompt_tokens)
            reused = reply.cached_tokens()
            if reused is None:
                reused = self._reused_estimate(rendered, total_prompt)
            self._last_sent = rendered + reply.content
            first_s = first if first is not None else end - start
            yield StreamEvent(
                result=GenerationResult(
                    text=reply.text(),
                    prompt_tokens=total_prompt,
                    prompt_evaluated=max(0, total_prompt - reused),
                    prompt_reused=reused,
                    completion_tokens=reply.completion_tokens(),
                    finish_reason=reply.finish_reason(cancelled),
                    prefill_s=first_s,
                    generate_s=max(0.0, end - start - first_s),
                    first_token_s=first,
                    ignored=ignored,
                )
            )

        return events()

    def warm(
        self,
        messages: ChatMessages,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
        prompt: EncodedPrompt | None = None,
    ) -> WarmResult:
        """The request :meth:`generate` would send (``cache_prompt``, the same
        ``n_cache_reuse``), asking for one token, which is discarded: llama-server
        evaluates the whole prompt before it samples, and keeps it in the slot's cache
        (``n_predict`` 0 samples one token too: the limit is checked after a token).
        llama.cpp servers only (:class:`~.base.PromptWarmer`); elsewhere nothing is sent."""
        if self.profile.kind != "llama.cpp":
            return WarmResult(0, 0, 0, 0.0, finished=False)
        start = time.perf_counter()
        result: GenerationResult | None = None
        for event in self.generate(messages, GenerationOptions(max_tokens=1, temperature=0.0),
                                   tools=tools, cancel=cancel, prompt=prompt):
            result = event.result or result
        seconds = time.perf_counter() - start
        if result is None:
            return WarmResult(0, 0, 0, seconds, finished=False)
        return WarmResult(result.prompt_tokens, result.prompt_evaluated, result.prompt_reused,
                          seconds, finished=not result.stopped)

    def _reused_estimate(self, rendered: str, prompt_tokens: int) -> int:
        """Prompt tokens a single-slot server (llama-cpp-python's) kept from the last call:
        the prefix this prompt shares with the last prompt and its reply (used when the
        server does not report it)."""
        n = len(os.path.commonprefix([rendered, self._last_sent]))  # noqa: RUF071 (text)
        if n == 0:
            return 0
        # The server evaluates at least the prompt's last token.
        if n >= len(rendered):
            return max(0, prompt_tokens - 1)
        try:
            return min(prompt_tokens - 1, len(self._counting.tokenize_prompt(rendered[:n])))
        except ServerError:
            return 0

    def _learned(self, exc: ContextOverflowError, prompt_tokens: int) -> ContextOverflowError:
        """Adopt the window a "context exceeded" answer names (when smaller than ours)."""
        if exc.window > 0 and (not self._window or exc.window < self._window):
            log.info("%s: the server's window is %d tokens (it said so on an overflow)",
                     self.profile.base_url, exc.window)
            self._window, self._window_source = exc.window, "from the server's overflow answer"
        if exc.prompt_tokens <= 0:
            exc.prompt_tokens = prompt_tokens
        return exc

    def _stream_error(self, event: dict[str, Any], prompt_tokens: int) -> Exception:
        err = event.get("error")
        message = error_message(event, str(err))
        code = err.get("code") if isinstance(err, dict) else None
        status = code if isinstance(code, int) else 400
        overflow = overflow_from(status, event, message)
        if overflow is not None:
            return self._learned(overflow, prompt_tokens)
        url = self._http.base_url
        return ServerStreamError(url, f"The server at {url} failed while replying: {message}")

    def _diagnose_empty(self, body: dict[str, Any], prompt_tokens: int) -> None:
        """A stream that ended before any event (llama-cpp-python does this for a prompt
        that does not fit): ask again without streaming, one token, to get the error."""
        try:
            self._one_token(body)
        except ContextOverflowError as exc:
            raise self._learned(exc, prompt_tokens) from None
        raise ServerStreamError(
            self._http.base_url,
            f"The server at {self._http.base_url} ended the reply without sending anything.",
        )

    def _one_token(self, body: dict[str, Any]) -> Any:
        """``body`` asked again without streaming, for one token: the server's answer."""
        quiet = {**body, "stream": False, "max_tokens": 1}
        quiet.pop("stream_options", None)
        return self._http.post("/v1/chat/completions", quiet)

    def close(self) -> None:
        self._counting.close()
        self._http.close()


def _most_events(body: dict[str, Any]) -> int:
    """The most events a reply asked for ``max_tokens`` may take: about one per token,
    with room for the role, usage, progress and tool-call pieces; a server that streams on
    past it is stopped."""
    return 2 * int(body.get("max_tokens", 0)) + 10_000
