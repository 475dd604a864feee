"""The benchmark's view of the model: a backend that forwards every call and reports it.

:func:`recording_backend` wraps the loaded backend for one run; each model call (chat or
summarizer) is reported to a :class:`CallSink` (the runner's recorder) with its result or
its overflow. With ``window_cap`` the wrapper presents the model as trained on at most that
many tokens (``--quick`` runs in small windows). The wrapper is KV-cache aware exactly when
the wrapped backend is, so an in-context summary sees the same cache as in the app.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Protocol

from assistant.llm.base import (
    CancelToken,
    ChatMessages,
    ContextOverflowError,
    EncodedPrompt,
    GenerationOptions,
    GenerationResult,
    KVCacheAware,
    KVState,
    LLMBackend,
    ModelInfo,
    PromptEncoder,
    PromptWarmer,
    StreamEvent,
    WarmResult,
)
from assistant.llm.llama_backend import LlamaBackend

from .metrics import CallKind


class CallSink(Protocol):
    """Where the recorder hears of model calls."""

    def call_kind(self) -> CallKind: ...

    def call_finished(self, kind: CallKind, result: GenerationResult) -> None: ...

    def call_overflowed(self, kind: CallKind, prompt_tokens: int) -> None: ...

    def call_started(self, kind: CallKind, messages: ChatMessages) -> None:
        """The prompt of a call about to be made (the first one of a turn is kept)."""
        ...


class RecordingBackend:
    """An :class:`LLMBackend` that forwards to ``inner`` and records each call.

    With ``window_cap`` it presents the model as trained on at most that many tokens, so
    the mode's policy is scaled to that window (``--quick``); the inner backend must then
    have been loaded with that context size so overflows happen there too.
    """

    def __init__(self, inner: LLMBackend, window_cap: int | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.window_cap = window_cap
        self.recorder: CallSink | None = None
        #: When a list: each chat call's (cached tokens, prompt tokens) is appended (for
        #: ``reuse_quality``; the real model only).
        self.pairs: list[tuple[list[int], list[int]]] | None = None

    @property
    def info(self) -> ModelInfo:
        info = self.inner.info
        if self.window_cap is None:
            return info
        return replace(
            info,
            trained_context=min(info.trained_context or self.window_cap, self.window_cap),
            context_window=min(info.context_window, self.window_cap),
        )

    def tokenize(self, text: str) -> list[int]:
        return self.inner.tokenize(text)

    def count(self, text: str) -> int:
        return self.inner.count(text)

    def render_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> str:
        return self.inner.render_prompt(messages, tools)

    def count_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        return self.inner.count_prompt(messages, tools)

    def encode_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> EncodedPrompt:
        if isinstance(self.inner, PromptEncoder):
            return self.inner.encode_prompt(messages, tools)
        return EncodedPrompt(count=self.inner.count_prompt(messages, tools))

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
        rec = self.recorder
        kind: CallKind = rec.call_kind() if rec is not None else "chat"
        if rec is not None:
            rec.call_started(kind, messages)
        if self.pairs is not None and kind == "chat" and isinstance(self.inner, LlamaBackend):
            tokens = (
                list(prompt.tokens) if prompt is not None and prompt.tokens is not None
                else self.inner.tokenize_prompt(self.inner.render_prompt(messages, tools))
            )
            self.pairs.append((self.inner.cached_tokens(), tokens))
        try:
            for event in self.inner.generate(
                messages, options, tools=tools, cancel=cancel, on_prefill=on_prefill,
                prompt=prompt,
            ):
                if event.result is not None and rec is not None:
                    rec.call_finished(kind, event.result)
                yield event
        except ContextOverflowError as exc:
            if rec is not None:
                rec.call_overflowed(kind, exc.prompt_tokens)
            raise

    def warm(
        self,
        messages: ChatMessages,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
        prompt: EncodedPrompt | None = None,
    ) -> WarmResult:
        """The read-ahead, not recorded as a call (the runner counts its tokens apart)."""
        if not isinstance(self.inner, PromptWarmer):
            return WarmResult(0, 0, 0, 0.0, finished=False)
        return self.inner.warm(messages, tools=tools, cancel=cancel, prompt=prompt)

    def close(self) -> None:
        self.inner.close()


class KVRecordingBackend(RecordingBackend):
    """A :class:`RecordingBackend` around a :class:`KVCacheAware` backend, and KV-cache
    aware itself, so an in-context summary sees the same cache here as in the app."""

    def __init__(self, inner: KVBackend, window_cap: int | None = None) -> None:
        super().__init__(inner, window_cap)
        self.kv: KVCacheAware = inner

    def tokenize_prompt(self, text: str) -> list[int]:
        return self.kv.tokenize_prompt(text)

    def cached_prefix(self, tokens: Sequence[int]) -> int:
        return self.kv.cached_prefix(tokens)

    def save_state(self) -> KVState:
        return self.kv.save_state()

    def load_state(self, state: KVState) -> None:
        self.kv.load_state(state)

    def reset_kv_cache(self) -> None:
        self.kv.reset_kv_cache()

    def state_fingerprint(self) -> str:
        return self.kv.state_fingerprint()


class KVBackend(LLMBackend, KVCacheAware, Protocol):
    """A loaded model that is also KV-cache aware."""


def recording_backend(inner: LLMBackend, window_cap: int | None = None) -> RecordingBackend:
    """A recorder around ``inner`` that is KV-cache aware exactly when ``inner`` is."""
    if isinstance(inner, KVCacheAware):
        return KVRecordingBackend(inner, window_cap)
    return RecordingBackend(inner, window_cap)
