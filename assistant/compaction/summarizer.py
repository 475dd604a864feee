"""Summaries written by the loaded model, with bounded input, validation and a fallback.

:class:`ModelSummarizer` serializes the span to text (:mod:`.serialize`) and asks the same
model for a structured summary (:mod:`.prompts`); with a previous summary it asks for an
update that merges the new messages in. Input is bounded: when the transcript does not fit
the model's window (minus the reply budget and the prompt's own overhead) it is cut into
chunks that each fit; the first chunk is summarized and each next chunk is merged into the
running summary with the update prompt. The reply is bounded by ``max_tokens`` (the
summary budget). Each summary is validated (:mod:`.validate`); a rejected one is retried
once with a stricter prompt, then the deterministic :func:`.extractive.extractive_summary`
is used instead. A split turn's prefix is summarized by its own call and appended.

Two ways to show the model the span (chosen per compaction by what llama.cpp must evaluate):

* **in context**: the chat prompt itself (system prompt, previous summary, the messages to
  summarize, exactly as the chat sent them: :attr:`SummaryRequest.chat`) followed by one
  request message (:func:`.prompts.build_in_context`). llama.cpp still holds those tokens
  from the chat's last call, so only the request is evaluated: on a full local window that
  is a few hundred tokens instead of several thousand. Used when it fits the window with
  the reply budget and evaluates fewer tokens than the transcript would.
* **transcript**: the span re-evaluated as one labelled transcript in a fresh prompt
  (:mod:`.serialize`), chunked when it does not fit. Used when nothing is cached (a chat
  just reopened), when the span no longer fits beside the reply, and for backends that
  cannot tell what is cached.

Either way the reply is validated against the same rules, and the retry appends the
stricter instruction at the end so the retry's prompt reuses the first attempt's prefix.
Every evaluated prompt token is reported (:attr:`SummaryOutcome.prompt_evaluated`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from assistant.compaction import prompts
from assistant.compaction.extractive import MechanicalState, extractive_summary
from assistant.compaction.serialize import serialize, serialize_message
from assistant.compaction.tokens import TokenCounter, truncate_to_tokens
from assistant.compaction.validate import validate_summary
from assistant.conversation import Message
from assistant.llm.base import CancelToken, GenerationOptions, KVCacheAware, LLMBackend

log = logging.getLogger("assistant.compaction")

SummaryKind = Literal["model", "extractive", "hook"]
#: Tokens kept free in every summarizer prompt for template quirks.
MARGIN = 32
#: Re-tokenizing a reply can differ from the generated tokens by a few.
BUDGET_TOLERANCE = 8
#: Words asked for per token of budget (a token is about three quarters of a word).
WORDS_PER_TOKEN = 0.6


class SummaryCancelled(Exception):
    """The user cancelled while the summary was being written."""


@dataclass(frozen=True)
class SummaryRequest:
    history: Sequence[Message]
    turn_prefix: Sequence[Message]
    previous: str | None
    focus: str | None
    #: Tokens the summary proper may use (the reply's ``max_tokens``).
    budget: int
    state: MechanicalState
    #: The model's context window for the summarizer's own calls.
    window: int
    #: The chat prompt up to the cut (system, previous summary, ``history`` and
    #: ``turn_prefix`` as the chat last sent them) for an in-context summary; None: no.
    chat: Sequence[dict[str, Any]] | None = None
    #: The tool schemas the chat prompt was rendered with.
    tools: Sequence[dict[str, Any]] | None = None


@dataclass
class SummaryOutcome:
    text: str
    kind: SummaryKind
    calls: int = 0
    rejected: list[str] = field(default_factory=list)
    prompt_evaluated: int = 0
    prompt_reused: int = 0
    #: How the model saw the span: "in-context", "transcript" (or "" when not asked).
    approach: str = ""


class Summarizer(Protocol):
    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        """Return the summary proper (no header, no verbatim record)."""
        ...


class ExtractiveSummarizer:
    """No model: the deterministic summary from the mechanical state."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        if cancel is not None and cancel.cancelled:
            raise SummaryCancelled
        text = extractive_summary(
            [*request.history, *request.turn_prefix],
            request.state,
            previous=request.previous,
            budget=request.budget,
            count=self.counter.text,
        )
        return SummaryOutcome(text=text, kind="extractive")


#: After this many compactions in a row in which the model's summary was rejected twice,
#: the model is not asked again (for this model): each attempt costs a full prefill and
#: generation (about a minute for SmolLM2-135M on 2 cores) only to be thrown away. Any
#: accepted summary resets the count; a new model gets a new summarizer.
GIVE_UP_AFTER = 2


class _Rejected(Exception):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class ModelSummarizer:
    """The loaded model writes the summary; see the module docstring."""

    def __init__(
        self,
        backend: LLMBackend,
        counter: TokenCounter | None = None,
        *,
        temperature: float = 0.0,
        tool_chars: int = 500,
        give_up_after: int = GIVE_UP_AFTER,
    ) -> None:
        self.backend = backend
        self.counter = counter or TokenCounter(backend)
        self.temperature = temperature
        self.tool_chars = tool_chars
        self.give_up_after = give_up_after
        #: Compactions in a row whose model summaries were rejected twice.
        self.consecutive_fallbacks = 0

    # -- public ------------------------------------------------------------------------
    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        if self.give_up_after and self.consecutive_fallbacks >= self.give_up_after:
            log.info(
                "model summaries were rejected in %d compactions in a row; using the "
                "extractive summary without asking the model",
                self.consecutive_fallbacks,
            )
            return ExtractiveSummarizer(self.counter).summarize(request, cancel)
        out = SummaryOutcome(text="", kind="model")
        split = bool(request.turn_prefix)
        has_history = bool(request.history) or bool(request.previous)
        hist_budget = request.budget
        if split and has_history:
            hist_budget = max(int(request.budget * 0.65), 32)
        prefix_budget = max(request.budget - hist_budget, 32) if has_history else request.budget
        try:
            in_context = self._in_context(request, out, cancel)
            if in_context is not None:
                self.consecutive_fallbacks = 0
                out.text = in_context
                return out
            out.approach = "transcript"
            parts: list[str] = []
            if request.history:
                kind = "update" if request.previous else "initial"
                parts.append(
                    self._span(
                        request.history, request.previous, kind, hist_budget, request, out,
                        cancel,
                    )
                )
            elif request.previous:
                parts.append(truncate_to_tokens(request.previous, hist_budget, self.counter.text))
            if split:
                parts.append(
                    self._span(
                        request.turn_prefix, None, "prefix", prefix_budget, request, out, cancel
                    )
                )
        except _Rejected as exc:
            self.consecutive_fallbacks += 1
            log.warning("model summary rejected twice (%s); using the extractive summary", exc)
            fallback = ExtractiveSummarizer(self.counter).summarize(request, cancel)
            fallback.calls, fallback.rejected = out.calls, out.rejected
            fallback.prompt_evaluated = out.prompt_evaluated
            fallback.prompt_reused = out.prompt_reused
            fallback.approach = out.approach
            return fallback
        self.consecutive_fallbacks = 0
        out.text = prompts.TURN_SEPARATOR.join(p for p in parts if p)
        return out

    # -- internals ---------------------------------------------------------------------
    def _in_context(
        self, request: SummaryRequest, out: SummaryOutcome, cancel: CancelToken | None
    ) -> str | None:
        """The summary written on top of the cached chat prompt; None: not possible/cheaper.

        Raises :class:`_Rejected` when both attempts were rejected.
        """
        be = self.backend
        if (
            request.chat is None
            or not isinstance(be, KVCacheAware)
            or not (request.history or request.turn_prefix)
        ):
            return None
        cached = be.cached_prefix
        update = request.previous is not None
        split = bool(request.turn_prefix)
        words = _words(request.budget)

        def messages(problems: str | None) -> list[dict[str, Any]]:
            ask = prompts.build_in_context(
                update=update, split=split, focus=request.focus, words=words, problems=problems
            )
            return [*(request.chat or ()), {"role": "user", "content": ask}]

        strict = messages("missing sections: Goal, Constraints & Preferences, Progress, Key "
                          "Decisions, Next Steps, Critical Context; copies the conversation")
        tokens = _prompt_tokens(be, strict, request.tools)
        if len(tokens) + request.budget + MARGIN > request.window:
            log.info("in-context summary does not fit (%d prompt tokens); using the transcript",
                     len(tokens))
            return None
        first = _prompt_tokens(be, messages(None), request.tools)
        in_context_cost = len(first) - cached(first)
        chunks = self._chunks(request.history or request.turn_prefix, "initial",
                              request.budget, request)
        text_prompt = prompts.build_prompt(
            chunks[0] if chunks else "", previous=request.previous,
            kind="update" if update else "initial", focus=request.focus, words=words,
        )
        text_tokens = _prompt_tokens(be, [
            {"role": "system", "content": prompts.SYSTEM},
            {"role": "user", "content": text_prompt},
        ], None)
        transcript_cost = len(text_tokens) - cached(text_tokens)
        if in_context_cost >= transcript_cost:
            log.info("in-context summary would evaluate %d tokens, the transcript %d; using the "
                     "transcript", in_context_cost, transcript_cost)
            return None
        out.approach = "in-context"
        # The model saw whole tool outputs here: check copying against all of them.
        source = serialize([*request.history, *request.turn_prefix], tool_chars=1 << 30)
        return self._attempts(
            messages, source, request.budget, out, cancel, request.tools, "in-context summary"
        )

    def _span(
        self,
        messages: Sequence[Message],
        previous: str | None,
        kind: str,
        budget: int,
        request: SummaryRequest,
        out: SummaryOutcome,
        cancel: CancelToken | None,
    ) -> str:
        running = previous
        for i, chunk in enumerate(self._chunks(messages, kind, budget, request)):
            this_kind = kind if i == 0 else "update"
            if this_kind == "initial" and running:
                this_kind = "update"
            running = self._validated(chunk, running, this_kind, budget, request, out, cancel)
        return running or ""

    def _prompt_overhead(self, kind: str, budget: int, request: SummaryRequest) -> int:
        probe = prompts.build_prompt(
            "", previous="x", kind=kind, focus=request.focus, words=_words(budget),
            problems="missing sections: Goal, Constraints & Preferences, Progress, Key "
            "Decisions, Next Steps, Critical Context; copies the conversation",
        )
        base = self.counter.exact(
            [{"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": probe}]
        )
        return base + budget  # room for a previous summary of up to ``budget`` tokens

    def _chunks(
        self, messages: Sequence[Message], kind: str, budget: int, request: SummaryRequest
    ) -> list[str]:
        limit = request.window - budget - self._prompt_overhead(kind, budget, request) - MARGIN
        limit = max(limit, 64)
        chunks: list[str] = []
        current: list[str] = []
        used = 0
        for msg in messages:
            text = serialize_message(msg, tool_chars=self.tool_chars)
            size = self.counter.text(text) + 2
            if size > limit:
                text = truncate_to_tokens(text, limit - 2, self.counter.text)
                size = limit
            if current and used + size > limit:
                chunks.append("\n\n".join(current))
                current, used = [], 0
            current.append(text)
            used += size
        if current:
            chunks.append("\n\n".join(current))
        return chunks

    def _validated(
        self,
        transcript: str,
        previous: str | None,
        kind: str,
        budget: int,
        request: SummaryRequest,
        out: SummaryOutcome,
        cancel: CancelToken | None,
    ) -> str:
        def messages(problems: str | None) -> list[dict[str, Any]]:
            content = prompts.build_prompt(
                transcript, previous=previous, kind=kind, focus=request.focus,
                words=_words(budget), problems=problems,
            )
            return [
                {"role": "system", "content": prompts.SYSTEM},
                {"role": "user", "content": content},
            ]

        return self._attempts(messages, transcript, budget, out, cancel, None, "summary")

    def _attempts(
        self,
        messages: Callable[[str | None], list[dict[str, Any]]],
        source: str,
        budget: int,
        out: SummaryOutcome,
        cancel: CancelToken | None,
        tools: Sequence[dict[str, Any]] | None,
        label: str,
    ) -> str:
        """Ask, validate, retry once with the problems named; raises :class:`_Rejected`."""
        problems: list[str] = []
        for attempt in range(2):
            msgs = messages("; ".join(problems) if attempt else None)
            text, finish = self._generate(msgs, budget, out, cancel, tools)
            problems = validate_summary(
                text, source=source, budget=budget + BUDGET_TOLERANCE,
                count=self.counter.text, finish_reason=finish,
            )
            if not problems:
                return text.strip()
            out.rejected.append("; ".join(problems))
            log.info("%s attempt %d rejected: %s", label, attempt + 1, "; ".join(problems))
        raise _Rejected(problems)

    def _generate(
        self,
        messages: list[dict[str, Any]],
        budget: int,
        out: SummaryOutcome,
        cancel: CancelToken | None,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> tuple[str, str]:
        if cancel is not None and cancel.cancelled:
            raise SummaryCancelled
        pieces: list[str] = []
        finish = "stop"
        out.calls += 1
        options = GenerationOptions(
            max_tokens=budget, temperature=self.temperature, stop=("[User]:",)
        )
        stream = self.backend.generate(messages, options, tools=tools, cancel=cancel)
        for event in stream:
            if event.delta:
                pieces.append(event.delta)
                if "\n" in event.delta and _looping("".join(pieces)):
                    finish = "repetition"  # rejected anyway: do not wait for max_tokens
                    if isinstance(stream, Generator):
                        stream.close()
                    break
            if event.result is not None:
                finish = event.result.finish_reason
                out.prompt_evaluated += event.result.prompt_evaluated
                out.prompt_reused += event.result.prompt_reused
        if finish == "cancelled" or (cancel is not None and cancel.cancelled):
            raise SummaryCancelled
        return "".join(pieces), finish


def _prompt_tokens(
    be: LLMBackend, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
) -> list[int]:
    """The prompt's tokens, through the backend's incremental prompt tokenizer if it has one."""
    text = be.render_prompt(messages, tools)
    return be.tokenize_prompt(text) if isinstance(be, KVCacheAware) else be.tokenize(text)


def _looping(text: str) -> bool:
    """True when a substantial line already appeared three times (a degenerate loop)."""
    lines = [line.strip() for line in text.splitlines() if len(line.strip()) >= 24]
    return bool(lines) and Counter(lines).most_common(1)[0][1] >= 3


def _words(budget: int) -> int:
    return int(budget * WORDS_PER_TOKEN)
