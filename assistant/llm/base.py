"""The model backend contract: the protocols everything above ``llm/`` uses to reach a model,
and the values they exchange (docs/ARCHITECTURE.md, "The model behind protocols").

Prompts are lists of OpenAI-format message dicts (``Message.to_openai()``); the optional
protocols are checked with ``isinstance``, never by probing for methods.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

ChatMessages = Sequence[dict[str, Any]]


class LLMError(Exception):
    """Base class of backend errors."""


class ContextOverflowError(LLMError):
    """The prompt (plus the room asked for the reply) does not fit the context window."""

    def __init__(self, prompt_tokens: int, window: int, detail: str = "") -> None:
        self.prompt_tokens = prompt_tokens
        self.window = window
        msg = f"Prompt of {prompt_tokens:,} tokens does not fit the context window of {window:,}"
        super().__init__(msg + (f" ({detail})" if detail else ""))


class ModelLoadError(LLMError):
    """A model file is missing, truncated, not GGUF, or llama.cpp cannot load it."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"Cannot load model {path}: {reason}")


class GrammarError(LLMError):
    """A grammar given to a backend does not parse, or the model cannot follow it."""


class GenerationCancelled(LLMError):
    """Raised by helpers that need an answer when the user stopped the call."""


class CancelToken:
    """A thread-safe flag checked between tokens and prompt batches; :meth:`on_cancel`
    tells work that cannot poll it (llama.cpp inside one ``llama_decode``)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def reset(self) -> None:
        self._event.clear()

    def on_cancel(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` (from the cancelling thread) when the token is cancelled, or
        now if it already is. Returns a function that removes the listener."""
        with self._lock:
            already = self._event.is_set()
            if not already:
                self._listeners.append(listener)
        if already:
            listener()

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove


@dataclass(frozen=True)
class GenerationOptions:
    """How to sample one reply (one value, passed whole to every backend)."""

    #: Longest reply in tokens (the backend also stops at the end of the window).
    max_tokens: int
    temperature: float = 0.2
    top_p: float = 0.95
    #: Extra stop strings (the template's end-of-turn markers always stop).
    stop: tuple[str, ...] = ()
    #: A GBNF grammar the reply must follow. A backend that cannot honour it generates
    #: without it and names ``"grammar"`` in :attr:`GenerationResult.ignored`.
    grammar: str | None = None

    def __post_init__(self) -> None:
        if self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, not {self.max_tokens}")
        if not isinstance(self.stop, tuple):  # a list would make the value unhashable
            object.__setattr__(self, "stop", tuple(self.stop))


@dataclass
class GenerationResult:
    """What one model call did."""

    text: str
    prompt_tokens: int
    #: Prompt tokens evaluated in this call vs. reused from the KV cache.
    prompt_evaluated: int
    prompt_reused: int
    completion_tokens: int
    #: "stop" (end of turn), "length" (max tokens), "cancelled" (user stop).
    finish_reason: str
    prefill_s: float = 0.0
    generate_s: float = 0.0
    first_token_s: float | None = None
    #: Options the backend could not honour (e.g. ``("grammar",)``); empty when all were.
    ignored: tuple[str, ...] = ()
    #: Of ``prompt_reused``, the tokens kept by moving cached chunks after a changed span
    #: (see :mod:`assistant.llm.cache_reuse`) rather than as the common prefix.
    prompt_shifted: int = 0

    @property
    def stopped(self) -> bool:
        return self.finish_reason == "cancelled"

    @property
    def prefill_tokens_per_s(self) -> float | None:
        """Prompt tokens evaluated per second (None when nothing was evaluated)."""
        if self.prompt_evaluated <= 0 or self.prefill_s <= 0:
            return None
        return self.prompt_evaluated / self.prefill_s

    @property
    def tokens_per_s(self) -> float | None:
        """Reply tokens per second of generation (None for an empty reply)."""
        if self.completion_tokens <= 0 or self.generate_s <= 0:
            return None
        return self.completion_tokens / self.generate_s


@dataclass
class StreamEvent:
    """One streamed piece: a text delta, or (last) the result."""

    delta: str = ""
    result: GenerationResult | None = None


@dataclass(frozen=True)
class ModelInfo:
    name: str
    path: str
    trained_context: int
    context_window: int
    architecture: str
    chat_template_source: str
    supports_native_tools: bool
    size_bytes: int = 0
    extra: dict[str, str] = field(default_factory=dict)
    #: Whether ``count_prompt`` is exactly what the model sees. False for a server whose
    #: tokenizer is not known (the counts are cl100k estimates; the context bar says so).
    exact_counts: bool = True
    #: What a tool result opens with in this model's prompts (``ChatTemplate.result_tag``):
    #: a reply that starts with it writes out a result instead of answering.
    tool_result_tag: str = ""


@dataclass(frozen=True)
class KVState:
    """A snapshot of a backend's KV cache (its tokens and the engine's bytes), loadable only
    by the backend that saved it."""

    #: ``ModelInfo.path`` of the backend that saved it.
    model: str
    tokens: tuple[int, ...]
    #: The engine's bytes (a bytearray when the engine wrote them in place: no copy).
    data: bytes | bytearray = b""
    #: :meth:`KVCacheAware.state_fingerprint` of the backend that saved it.
    fingerprint: str = ""


@runtime_checkable
class PromptCounter(Protocol):
    """Renders prompts with the model's chat template and counts them exactly."""

    name: str

    def count(self, text: str) -> int:
        """Tokens of ``text`` (no special tokens added)."""
        ...

    @property
    def info(self) -> ModelInfo: ...

    def tokenize(self, text: str) -> list[int]:
        """Exact tokens of ``text`` (special tokens in it are parsed as such)."""
        ...

    def render_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> str:
        """The chat template applied to ``messages`` with the generation prompt."""
        ...

    def count_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        """Exact token count of ``render_prompt(messages, tools)``."""
        ...


@dataclass(frozen=True)
class EncodedPrompt:
    """A prompt as the controller measured it, handed to ``generate`` so it is rendered and
    tokenized once per call. ``tokens`` is None where the engine takes messages (a server);
    ``text`` is None where the server renders."""

    count: int
    text: str | None = None
    tokens: tuple[int, ...] | None = None


@runtime_checkable
class PromptEncoder(Protocol):
    """Optional: renders and tokenizes a prompt in one step, for ``generate(prompt=...)``."""

    def encode_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> EncodedPrompt:
        """``render_prompt`` and its tokens; ``count`` equals ``count_prompt``."""
        ...


@runtime_checkable
class ChatGenerator(Protocol):
    """Streams replies. Used from one thread at a time."""

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
        """Stream a reply; the last event carries the :class:`GenerationResult`.

        ``prompt``: ``encode_prompt`` of these messages, evaluated instead of them.
        :class:`ContextOverflowError` and an unparsable grammar's :class:`GrammarError` are
        raised before anything is evaluated. ``cancel`` stops within one token or prompt
        batch; ``on_prefill(done, total)`` runs before the first batch (``done``: what the
        cache holds) and after each.
        """
        ...


@runtime_checkable
class LLMBackend(PromptCounter, ChatGenerator, Protocol):
    """A loaded model: counts, generates, and holds resources until :meth:`close`."""

    def close(self) -> None: ...


@runtime_checkable
class KVCacheAware(Protocol):
    """Optional: a backend that knows what its KV cache holds (to reuse it, start cold, or
    keep a chat's cache across a reload)."""

    def tokenize_prompt(self, text: str) -> list[int]:
        """Exactly ``tokenize(text)``, cheaper for a prompt sharing pieces with earlier ones."""
        ...

    def cached_prefix(self, tokens: Sequence[int]) -> int:
        """How many leading ``tokens`` the KV cache holds (a call would not evaluate)."""
        ...

    def save_state(self) -> KVState:
        """A snapshot of the KV cache (tokens and engine state)."""
        ...

    def load_state(self, state: KVState) -> None:
        """Restore a snapshot taken by this backend; raises :class:`LLMError` if it cannot."""
        ...

    def reset_kv_cache(self) -> None:
        """Forget everything cached: the next call evaluates its whole prompt."""
        ...

    def state_fingerprint(self) -> str:
        """What a saved state depends on besides its tokens (model file, context size, cache
        types, engine build); a state with another fingerprint cannot be loaded."""
        ...


@dataclass(frozen=True)
class WarmResult:
    """What one :meth:`PromptWarmer.warm` did: the prompt's tokens, those it evaluated into
    the cache and those the cache already held; ``finished`` False when it was cancelled
    (what it evaluated stays cached)."""

    prompt_tokens: int
    evaluated: int
    reused: int
    seconds: float
    finished: bool = True


@runtime_checkable
class PromptWarmer(Protocol):
    """Optional: evaluates a prompt into the KV cache without replying, so that a call
    whose prompt starts the same (the message the user is still typing) evaluates only
    the rest (the read-ahead; docs/ARCHITECTURE.md)."""

    def warm(
        self,
        messages: ChatMessages,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
        prompt: EncodedPrompt | None = None,
    ) -> WarmResult:
        """Evaluate the prompt ``generate`` would for these arguments, the way it would
        (the same prefix and chunk reuse), and keep it cached. ``cancel`` stops it between
        batches or inside one; raises :class:`ContextOverflowError` for a prompt that does
        not fit, before evaluating anything."""
        ...


@dataclass(frozen=True)
class EngineTuning:
    """How a backend evaluates prompts, from the settings (0: measured, or the default)."""

    threads: int = 0
    n_batch: int = 0
    n_ubatch: int = 0
    #: Keep cached chunks after a changed span by moving them (see
    #: :mod:`assistant.llm.cache_reuse`); only runs of at least ``min_chunk`` tokens.
    chunk_reuse: bool = False
    min_chunk: int = 64
    #: Prompt-lookup speculative decoding (see :mod:`assistant.llm.llama_speculative`); None: the
    #: model's measured default.
    prompt_lookup: bool | None = None
    #: The smaller model that drafts tokens for this one (a registry name or a GGUF path, see
    #: :mod:`assistant.llm.llama_draft`); "": none; None: the registry's measured pairing.
    draft_model: str | None = None
    #: How the chat is shown to the model: "chat" (its chat template) or "transcript"
    #: (User:/Assistant: lines, for base models: :mod:`assistant.llm.transcript`); None:
    #: chosen from the registry or the file.
    prompt_form: Literal["chat", "transcript"] | None = None


@runtime_checkable
class Tunable(Protocol):
    """A backend whose prompt evaluation can be tuned (optional; check with ``isinstance``)."""

    def tune(self, tuning: EngineTuning) -> str:
        """Apply ``tuning`` (the cache may be emptied); returns a line saying what is in
        force, e.g. "2 threads, n_batch 512, n_ubatch 512 (measured); chunk reuse off"."""
        ...


@runtime_checkable
class TokenGenerator(Protocol):
    """Optional: generates from exact prompt tokens, so a reply can be continued in place."""

    def generate_tokens(
        self,
        tokens: list[int],
        options: GenerationOptions,
        *,
        cancel: CancelToken | None = None,
        on_prefill: Callable[[int, int], None] | None = None,
    ) -> Iterator[StreamEvent]: ...
