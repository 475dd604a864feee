"""The model backend contract.

Everything above ``llm/`` talks to a model only through :class:`LLMBackend`. The real one
is :class:`assistant.llm.llama_backend.LlamaBackend`; tests use
:class:`assistant.llm.fake.ScriptedBackend`.

Prompts are lists of OpenAI-format message dicts (``Message.to_openai()``). The backend
renders them with the model's chat template, tokenizes the result with the model's own
tokenizer, and generates from exactly those tokens, so ``count_prompt`` is what the model
sees.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

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
    """A grammar given to ``generate`` does not parse, or the model cannot follow it."""


class GenerationCancelled(LLMError):
    """Raised by helpers that need an answer when the user stopped the call."""


class CancelToken:
    """A thread-safe flag checked between tokens (and between prompt batches)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def reset(self) -> None:
        self._event.clear()


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

    @property
    def stopped(self) -> bool:
        return self.finish_reason == "cancelled"


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


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens; the loaded model's tokenizer, or the cl100k fallback."""

    name: str

    def count(self, text: str) -> int: ...


@runtime_checkable
class LLMBackend(Tokenizer, Protocol):
    """A loaded model. Implementations are used from one thread at a time."""

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

    def generate(
        self,
        messages: ChatMessages,
        *,
        max_tokens: int,
        temperature: float = 0.2,
        top_p: float = 0.95,
        tools: Sequence[dict[str, Any]] | None = None,
        stop: Sequence[str] = (),
        cancel: CancelToken | None = None,
        on_prefill: Callable[[int, int], None] | None = None,
        grammar: str | None = None,
    ) -> Iterator[StreamEvent]:
        """Stream a reply; the last event carries the :class:`GenerationResult`.

        Raises :class:`ContextOverflowError` before evaluating anything when the prompt
        does not fit. ``cancel`` stops within one token, and between prompt batches.
        ``on_prefill(done, total)`` reports prompt evaluation progress. ``grammar`` (GBNF,
        root rule ``root``) constrains the reply to its language; one that does not parse
        raises :class:`GrammarError` before anything is evaluated.
        """
        ...

    def close(self) -> None: ...
