"""A scripted backend for unit tests: canned replies, real accounting.

It renders prompts with the same :class:`ChatTemplate` as the real backend (ChatML by
default), counts them with cl100k, simulates the KV cache (longest common token prefix with
the previous call; it is ``KVCacheAware``), and raises :class:`ContextOverflowError` exactly
where the real backend would. Replies come from a queue: strings, or callables that receive
the prompt messages.

    backend = ScriptedBackend(["Hello!", lambda msgs: "You said " + msgs[-1]["content"]])

A call with a grammar (``GenerationOptions.grammar``) simulates a constrained model: the
reply must be in the grammar's language (checked with :func:`tests.fakes.gbnf.to_regex`;
a reply such a model could not write raises ``ValueError``: the test's script is wrong;
with no reply queued it writes the shortest text the grammar allows, or the default reply
if that is allowed).
``ignore_grammar`` simulates a backend that cannot apply grammars (the reply is given as
is and ``"grammar"`` is reported in ``GenerationResult.ignored``); ``grammar_failure`` one
whose vocabulary cannot follow them (every call with a grammar raises
:class:`GrammarError` with that text).
"""

from __future__ import annotations

import re
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from assistant.llm.base import (
    CancelToken,
    ChatMessages,
    ContextOverflowError,
    EncodedPrompt,
    GenerationOptions,
    GenerationResult,
    GrammarError,
    KVState,
    LLMError,
    ModelInfo,
    StreamEvent,
    WarmResult,
)
from assistant.llm.cache_reuse import common_prefix
from assistant.llm.fallback_tokenizer import Cl100kTokenizer
from assistant.llm.template import ChatTemplate
from tests.fakes.gbnf import GBNFSyntaxError, shortest, to_regex

Reply = str | Callable[[list[dict[str, Any]]], str]


@dataclass
class RecordedCall:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    prompt_tokens: int
    max_tokens: int
    result: GenerationResult | None = None
    prompt_text: str = ""
    options: GenerationOptions | None = None

    @property
    def grammar(self) -> str | None:
        return self.options.grammar if self.options is not None else None


@dataclass
class ScriptedBackend:
    replies: list[Reply] = field(default_factory=list)
    window: int = 10_000
    trained_context: int = 8_192
    template_source: str | None = None
    #: Seconds to sleep per streamed piece (lets tests press Stop mid-reply).
    delay_per_token: float = 0.0
    #: Prompt evaluation in batches of this many tokens, ``delay_per_batch`` seconds each,
    #: reported through ``on_prefill`` like llama.cpp (0: all at once, no delay).
    prefill_batch: int = 0
    delay_per_batch: float = 0.0
    default_reply: str = "OK."
    calls: list[RecordedCall] = field(default_factory=list)
    name: str = "scripted (cl100k)"
    #: Simulate a backend that cannot apply grammars (replies as scripted, reported ignored).
    ignore_grammar: bool = False
    #: When set, every call with a grammar raises GrammarError(grammar_failure).
    grammar_failure: str | None = None

    def __post_init__(self) -> None:
        self._tok = Cl100kTokenizer()
        self._template = ChatTemplate(self.template_source, origin="scripted")
        self._cache: list[int] = []
        self.closed = False
        #: States loaded with :meth:`load_state` (tests of the resume path count them).
        self.loaded_states = 0
        #: Prompts evaluated by :meth:`warm` (the read-ahead), in order.
        self.warms: list[RecordedCall] = []

    # -- Tokenizer ---------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        return self._tok.tokenize(text)

    def count(self, text: str) -> int:
        return self._tok.count(text)

    # -- LLMBackend ----------------------------------------------------------------------
    @property
    def info(self) -> ModelInfo:
        return ModelInfo(
            name="scripted",
            path="<scripted>",
            trained_context=self.trained_context,
            context_window=self.window,
            architecture="scripted",
            chat_template_source=self._template.origin,
            supports_native_tools=self._template.native_tools,
            tool_result_tag=self._template.result_tag,
        )

    def render_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> str:
        return self._template.render(messages, tools)

    def count_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        return self.count(self.render_prompt(messages, tools))

    def encode_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> EncodedPrompt:
        """``PromptEncoder``: rendered and tokenized once, as the real backend does."""
        text = self.render_prompt(messages, tools)
        tokens = self.tokenize(text)
        return EncodedPrompt(count=len(tokens), text=text, tokens=tuple(tokens))

    # -- KVCacheAware ---------------------------------------------------------------------
    def tokenize_prompt(self, text: str) -> list[int]:
        return self.tokenize(text)

    def cached_prefix(self, tokens: Sequence[int]) -> int:
        """How many leading ``tokens`` the simulated KV cache holds (as LlamaBackend)."""
        return common_prefix(self._cache, tokens)

    def save_state(self) -> KVState:
        """The simulated cache; its "engine bytes" are the tokens themselves."""
        tokens = tuple(self._cache)
        return KVState(
            model=self.info.path, tokens=tokens, data=array("i", tokens).tobytes(),
            fingerprint=self.state_fingerprint(),
        )

    def load_state(self, state: KVState) -> None:
        if state.model != self.info.path or (
            state.fingerprint and state.fingerprint != self.state_fingerprint()
        ):
            raise LLMError(f"a KV state of {state.model} cannot be loaded into {self.info.path}")
        if state.data and bytes(state.data) != array("i", state.tokens).tobytes():
            raise LLMError("the KV state's bytes do not match its tokens")
        self._cache = list(state.tokens)
        self.loaded_states += 1

    def state_fingerprint(self) -> str:
        return f"scripted|{self.info.path}|{self.info.context_window}"

    def reset_kv_cache(self) -> None:
        self._cache = []

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

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
        """Stream the next scripted reply (held to a grammar: see the module docstring).
        With ``prompt`` (encoded by :meth:`encode_prompt`) its text and tokens are used, as
        the real backend does."""
        max_tokens = options.max_tokens
        msgs = [dict(m) for m in messages]
        if prompt is not None and prompt.text is not None and prompt.tokens is not None:
            text, tokens = prompt.text, list(prompt.tokens)
        else:
            text = self.render_prompt(msgs, tools)
            tokens = self.tokenize(text)
        record = RecordedCall(
            msgs, list(tools) if tools else None, len(tokens), max_tokens, prompt_text=text,
            options=options,
        )
        self.calls.append(record)
        if len(tokens) >= self.window:
            raise ContextOverflowError(len(tokens), self.window)
        grammar = None if self.ignore_grammar else options.grammar
        if grammar is not None and self.grammar_failure is not None:
            raise GrammarError(self.grammar_failure)
        reused = common_prefix(self._cache, tokens)
        if reused == len(tokens):
            reused -= 1  # llama.cpp re-evaluates the last token to get fresh logits
        prefill_start = time.perf_counter()
        if not self._prefill(len(tokens), reused, cancel, on_prefill):
            result = GenerationResult(
                text="", prompt_tokens=len(tokens), prompt_evaluated=0, prompt_reused=reused,
                completion_tokens=0, finish_reason="cancelled",
                prefill_s=time.perf_counter() - prefill_start,
            )
            record.result = result
            yield StreamEvent(result=result)
            return
        prefill_s = time.perf_counter() - prefill_start
        self._cache = list(tokens)
        if self.replies:
            reply = self.replies.pop(0)
            reply_text = reply(msgs) if callable(reply) else reply
            if grammar is not None:
                _check_grammar(grammar, reply_text)
        else:
            reply_text = self.default_reply
            if grammar is not None and not _in_language(grammar, reply_text):
                reply_text = shortest(grammar)  # a constrained model with nothing to say
        room = min(max_tokens, self.window - len(tokens))
        pieces = _pieces(reply_text)
        out: list[str] = []
        finish = "stop"
        start = time.perf_counter()
        first: float | None = None
        for i, piece in enumerate(pieces):
            if cancel is not None and cancel.cancelled:
                finish = "cancelled"
                break
            if i >= room:
                finish = "length"
                break
            if self.delay_per_token:
                time.sleep(self.delay_per_token)
            if first is None:
                first = time.perf_counter() - start
            out.append(piece)
            yield StreamEvent(delta=piece)
        reply_out = "".join(out)
        self._cache.extend(self.tokenize(reply_out))
        result = GenerationResult(
            text=reply_out,
            prompt_tokens=len(tokens),
            prompt_evaluated=len(tokens) - reused,
            prompt_reused=reused,
            completion_tokens=len(out),
            finish_reason=finish,
            prefill_s=prefill_s,
            generate_s=time.perf_counter() - start,
            first_token_s=first,
            ignored=("grammar",) if options.grammar is not None and grammar is None else (),
        )
        record.result = result
        yield StreamEvent(result=result)

    def warm(
        self,
        messages: ChatMessages,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
        prompt: EncodedPrompt | None = None,
    ) -> WarmResult:
        """``PromptWarmer``: the prompt's tokens (all but the last, as llama.cpp) into the
        simulated cache, in ``prefill_batch`` batches (what was done before a cancel stays);
        recorded in :attr:`warms` (no reply is taken from the queue)."""
        if prompt is not None and prompt.text is not None and prompt.tokens is not None:
            text, tokens = prompt.text, list(prompt.tokens)
        else:
            text = self.render_prompt(messages, tools)
            tokens = self.tokenize(text)
        self.warms.append(RecordedCall([dict(m) for m in messages], list(tools) if tools else None,
                                       len(tokens), 0, prompt_text=text))
        if len(tokens) >= self.window:
            raise ContextOverflowError(len(tokens), self.window)
        target = max(0, len(tokens) - 1)
        reused = min(common_prefix(self._cache, tokens), target)
        done = reused
        step = self.prefill_batch or target
        while done < target:
            if cancel is not None and cancel.cancelled:
                break
            if self.delay_per_batch:
                time.sleep(self.delay_per_batch)
            done = min(target, done + step)
        self._cache = tokens[:done]
        return WarmResult(len(tokens), done - reused, reused, 0.0, finished=done >= target)

    def _prefill(
        self,
        total: int,
        reused: int,
        cancel: CancelToken | None,
        on_prefill: Callable[[int, int], None] | None,
    ) -> bool:
        """Report (and, with ``delay_per_batch``, take time for) prompt evaluation; False
        when stopped between batches."""
        if self.prefill_batch <= 0:
            if on_prefill:
                on_prefill(total, total)
            return True
        done = reused
        if on_prefill:
            on_prefill(done, total)
        while done < total:
            if cancel is not None and cancel.cancelled:
                return False
            if self.delay_per_batch:
                time.sleep(self.delay_per_batch)
            done = min(total, done + self.prefill_batch)
            if on_prefill:
                on_prefill(done, total)
        return True

    def close(self) -> None:
        self.closed = True


def _in_language(grammar: str, reply: str) -> bool:
    try:
        return to_regex(grammar).fullmatch(reply) is not None
    except GBNFSyntaxError:
        return True


def _check_grammar(grammar: str, reply: str) -> None:
    try:
        pattern = to_regex(grammar)
    except GBNFSyntaxError as exc:
        if "recursive" in str(exc):
            return  # not checkable with a regular expression; the call is still recorded
        raise GrammarError(f"the grammar does not parse: {exc}") from exc
    if pattern.fullmatch(reply) is None:
        raise ValueError(f"scripted reply is outside the grammar's language: {reply[:80]!r}")


def _pieces(text: str) -> Iterator[str]:
    """Split into word-ish pieces so streaming has several steps (lazily: a reply of
    100 MB costs what is streamed of it, as a model that stops at its token limit)."""
    for m in _PIECE.finditer(text):
        yield m.group()


_PIECE = re.compile(r"[^ \n]*[ \n]|[^ \n]+")
