# Over 500 lines: ask-validate-retry, in context or transcript (issue 27: summary/).
"""Summaries written by the loaded model, with bounded input, validation and a fallback.
More in docs/COMPACTION.md."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal, Protocol

from assistant.compaction.summary import prompts
from assistant.compaction.summary.clean import Known, clean_summary
from assistant.compaction.summary.extractive import MechanicalState, extractive_summary
from assistant.compaction.summary.grammar import follows_skeleton, min_budget, summary_grammar
from assistant.compaction.summary.guided import GuidedRequest, user_rules
from assistant.compaction.summary.repair import repairable, sections_to_repair, splice
from assistant.compaction.summary.serialize import serialize, serialize_message
from assistant.compaction.summary.validate import validate_summary
from assistant.compaction.tokens import TokenCounter, truncate_to_tokens
from assistant.conversation import Message
from assistant.llm.base import (
    CancelToken,
    GenerationOptions,
    GrammarError,
    KVCacheAware,
    LLMBackend,
)

log = logging.getLogger("assistant.compaction")

SummaryKind = Literal["model", "extractive"]
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
    #: Whether the reply was generated under the summary grammar.
    grammar: bool = False
    #: Which summarizer wrote it and why, in words (the compaction card shows it).
    note: str = ""


class Summarizer(Protocol):
    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        """Return the summary proper (no header, no verbatim record)."""
        ...


class ExtractiveSummarizer:
    """No model: the deterministic summary from the mechanical state (milliseconds), with
    ``note`` saying why (the model's fallbacks, and the summary of a compaction in the turn
    whose model summary is left to idle time: :data:`DEFERRED_NOTE`)."""

    def __init__(
        self, counter: TokenCounter, note: str = "by the extractive summarizer (no model asked)"
    ) -> None:
        self.counter = counter
        self.note = note

    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        if cancel is not None and cancel.cancelled:
            raise SummaryCancelled
        text = extractive_summary(
            [*request.history, *request.turn_prefix], request.state, previous=request.previous,
            budget=request.budget, count=self.counter.text,
        )
        return SummaryOutcome(text, "extractive", note=self.note)


#: The note of a summary code wrote inside the turn instead of the model.
DEFERRED_NOTE = (
    "written by the code at once, without waiting for the model; the model writes the "
    "next summary while you read"
)


#: Compactions in a row with both model summaries rejected before the model is not asked
#: again until one is accepted: each attempt costs a prefill and a generation (about a
#: minute for SmolLM2-135M on 2 cores).
GIVE_UP_AFTER = 2


class _Rejected(Exception):
    """Both replies were rejected (the last one's problems)."""


class _NoGrammar(Exception):
    """The backend or model cannot write under the summary grammar (the reason)."""


@dataclass(frozen=True)
class _Call:
    """One summary being written: the request, its outcome so far, and what every reply is
    validated against besides its own source."""

    request: SummaryRequest
    out: SummaryOutcome
    cancel: CancelToken | None
    rules: list[str]
    reference: str
    #: What the user wrote (the span's user messages and the user's record).
    users: str
    guided: GuidedRequest | None = None


#: The note's words when the window is too small for the summary grammar (the benchmark
#: counts these apart).
TOO_SMALL_FOR_GRAMMAR = "the model was not asked (window too small for the summary grammar)"


#: Problems quoted in the longest retry prompt (sizes prompts before the first attempt).
_PROBE_PROBLEMS = (
    "missing sections: Goal, Constraints & Preferences, Progress, Key Decisions, Next Steps, "
    "Critical Context; continues the transcript; says nothing specific in: Done, In Progress"
)


def _record(state: MechanicalState) -> list[str]:
    """The user's record and the file lists: text a summary may name besides the span."""
    parts = [*state.user_messages, *state.constraints, *state.files.read, *state.files.modified]
    parts.extend(t for t in (state.first_request, state.last_request) if t)
    return parts


class ModelSummarizer:
    """The loaded model writes the summary (docs/COMPACTION.md)."""

    def __init__(self, backend: LLMBackend, counter: TokenCounter | None = None) -> None:
        self.backend = backend
        self.counter = counter or TokenCounter(backend)
        self.consecutive_fallbacks = 0
        #: "auto" (try the summary grammar), "on" (it works), "off" (:attr:`grammar_note`).
        self.grammar_state = "auto"
        self.grammar_note = ""
        #: Told (done, total) prompt tokens while a summary's prompt is evaluated.
        self.on_prefill: Callable[[int, int], None] | None = None

    def asks_model(self, request: SummaryRequest) -> bool:
        """Whether :meth:`summarize` would ask the model (not given up, part not too small)."""
        return not self._given_up() and not self._too_small(request)

    def _given_up(self) -> bool:
        return self.consecutive_fallbacks >= GIVE_UP_AFTER

    def _too_small(self, request: SummaryRequest) -> bool:
        return self.grammar_state != "off" and request.budget < min_budget()

    def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> SummaryOutcome:
        if self._given_up():
            log.info(
                "model summaries were rejected in %d compactions in a row; using the "
                "extractive summary without asking the model",
                self.consecutive_fallbacks,
            )
            return ExtractiveSummarizer(
                self.counter, "by the extractive fallback: the model was not asked, its "
                f"summaries were rejected in {self.consecutive_fallbacks} compactions in a row",
            ).summarize(request, cancel)
        if self._too_small(request):
            # Every reply would be cut at the length limit: do not spend a prefill on it.
            log.info(
                "the summary's model part has %d tokens, fewer than the %d the summary "
                "grammar needs; using the extractive summary", request.budget, min_budget(),
            )
            return ExtractiveSummarizer(
                self.counter, f"by the extractive summarizer: {TOO_SMALL_FOR_GRAMMAR}, its "
                f"part of the summary has {request.budget} tokens and the summary grammar "
                f"needs {min_budget()}",
            ).summarize(request, cancel)
        out = SummaryOutcome(text="", kind="model")
        span = [*request.history, *request.turn_prefix]
        users = [m.model_view_content() for m in span if m.role == "user"]
        call = _Call(
            request, out, cancel, rules=user_rules(span, request.state.constraints),
            reference="\n".join([request.previous or "", *_record(request.state)]),
            users="\n".join([*users, *request.state.user_messages]),
        )
        try:
            if self.grammar_state != "off":
                try:
                    out.grammar = True  # also when its replies are rejected (_Rejected)
                    out.text = self._guided(call)
                except _NoGrammar as exc:
                    out.grammar = False
                    self._grammar_off(str(exc))
            if not out.grammar:
                out.text = self._free(call)
        except _Rejected as exc:
            self.consecutive_fallbacks += 1
            log.warning("model summary rejected twice (%s); using the extractive summary", exc)
            fallback = ExtractiveSummarizer(
                self.counter,
                f"by the extractive fallback: the model's summaries were rejected twice ({exc})",
            ).summarize(request, cancel)
            # What the model's attempts cost and why they failed stay on the outcome.
            return replace(out, text=fallback.text, kind=fallback.kind, note=fallback.note)
        self.consecutive_fallbacks = 0
        how = "under the summary grammar" if out.grammar else (
            f"with the free prompts (no grammar: {self.grammar_note})")
        retried = " after one rejected attempt" if out.rejected else ""
        out.note = f"written by the model {how}{retried}"
        return out

    def _grammar_off(self, reason: str) -> None:
        self.grammar_state = "off"
        self.grammar_note = reason
        log.warning(
            "%s: summaries use the free prompts from now on; the summary grammar failed (%s)",
            self.backend.info.name, reason,
        )

    def _free(self, call: _Call) -> str:
        """The summary from the free prompts (models that cannot follow the grammar)."""
        request = call.request
        split = bool(request.turn_prefix)
        has_history = bool(request.history) or bool(request.previous)
        hist_budget = request.budget
        if split and has_history:
            hist_budget = max(int(request.budget * 0.65), 32)
        prefix_budget = max(request.budget - hist_budget, 32) if has_history else request.budget
        in_context = self._in_context(call)
        if in_context is not None:
            return in_context
        call.out.approach = "transcript"
        parts: list[str] = []
        if request.history:
            kind = "update" if request.previous else "initial"
            parts.append(self._span(call, request.history, request.previous, kind, hist_budget))
        elif request.previous:
            parts.append(truncate_to_tokens(request.previous, hist_budget, self.counter.text))
        if split:
            parts.append(self._span(call, request.turn_prefix, None, "prefix", prefix_budget))
        return prompts.TURN_SEPARATOR.join(p for p in parts if p)

    def _guided(self, call: _Call) -> str:
        """One reply under the summary grammar, in context when cheaper (:mod:`.guided`)."""
        request = call.request
        guided = GuidedRequest.build(
            request.history, request.turn_prefix, previous=request.previous,
            focus=request.focus, budget=request.budget,
            recorded_rules=request.state.constraints,
        )
        call = replace(call, guided=guided)
        overhead = self.counter.exact(guided.transcript_messages("", _PROBE_PROBLEMS))
        room = request.window - request.budget - overhead - MARGIN
        transcript = guided.transcript(max(room, 64), self.counter.text)
        text_messages = partial(guided.transcript_messages, transcript)
        chat = request.chat
        if chat is not None:
            chat_messages = partial(guided.in_context, chat)
            if self._prefer_in_context(request, chat_messages, text_messages):
                call.out.approach = "in-context"
                return self._attempts(call, chat_messages, guided.source, request.budget,
                                      request.tools, "in-context summary",
                                      partial(guided.in_context, chat, None))
        call.out.approach = "transcript"
        return self._attempts(call, text_messages, guided.source, request.budget, None,
                              "summary", partial(guided.transcript_messages, transcript, None))

    def _prefer_in_context(
        self, request: SummaryRequest, chat_messages: Callable[[str | None], list[dict[str, Any]]],
        text_messages: Callable[[str | None], list[dict[str, Any]]],
    ) -> bool:
        """Whether the request on top of the cached chat fits and evaluates fewer tokens
        than the transcript prompt."""
        be = self.backend
        if not isinstance(be, KVCacheAware) or not (request.history or request.turn_prefix):
            return False
        longest = _prompt_tokens(be, chat_messages(_PROBE_PROBLEMS), request.tools)
        if len(longest) + request.budget + MARGIN > request.window:
            log.info("in-context summary does not fit (%d prompt tokens); using the transcript",
                     len(longest))
            return False
        first = _prompt_tokens(be, chat_messages(None), request.tools)
        in_context_cost = len(first) - be.cached_prefix(first)
        text_tokens = _prompt_tokens(be, text_messages(None), None)
        transcript_cost = len(text_tokens) - be.cached_prefix(text_tokens)
        if in_context_cost >= transcript_cost:
            log.info("in-context summary would evaluate %d tokens, the transcript %d; using the "
                     "transcript", in_context_cost, transcript_cost)
            return False
        return True

    def _in_context(self, call: _Call) -> str | None:
        """The free-prompt summary on top of the cached chat prompt; None: not cheaper."""
        request = call.request
        chat = request.chat
        if chat is None:
            return None
        update = request.previous is not None
        split = bool(request.turn_prefix)
        words = _words(request.budget)

        def messages(problems: str | None) -> list[dict[str, Any]]:
            ask = prompts.build_in_context(
                update=update, split=split, focus=request.focus, words=words, problems=problems
            )
            return [*chat, {"role": "user", "content": ask}]

        chunks = self._chunks(request.history or request.turn_prefix, "initial",
                              request.budget, request)

        def text_messages(problems: str | None) -> list[dict[str, Any]]:
            return _free_prompt(prompts.build_prompt(
                chunks[0] if chunks else "", previous=request.previous,
                kind="update" if update else "initial", focus=request.focus, words=words,
            ))

        if not self._prefer_in_context(request, messages, text_messages):
            return None
        call.out.approach = "in-context"
        # The model saw whole tool outputs here: check copying against all of them.
        source = serialize([*request.history, *request.turn_prefix], tool_chars=1 << 30)
        return self._attempts(call, messages, source, request.budget, request.tools,
                              "in-context summary")

    def _span(
        self, call: _Call, messages: Sequence[Message], previous: str | None, kind: str,
        budget: int,
    ) -> str:
        """The span's summary from the free prompts, each chunk updating the one before."""
        request = call.request
        running = previous
        for i, chunk in enumerate(self._chunks(messages, kind, budget, request)):
            this_kind = kind if i == 0 and not (kind == "initial" and running) else "update"

            def ask(
                problems: str | None, chunk: str = chunk, running: str | None = running,
                this_kind: str = this_kind,
            ) -> list[dict[str, Any]]:
                return _free_prompt(prompts.build_prompt(
                    chunk, previous=running, kind=this_kind, focus=request.focus,
                    words=_words(budget), problems=problems,
                ))

            running = self._attempts(call, ask, chunk, budget, None, "summary")
        return running or ""

    def _chunks(
        self, messages: Sequence[Message], kind: str, budget: int, request: SummaryRequest
    ) -> list[str]:
        probe = prompts.build_prompt(
            "", previous="x", kind=kind, focus=request.focus, words=_words(budget),
            problems=_PROBE_PROBLEMS,
        )
        # The prompt, a previous summary of up to ``budget`` tokens, and the reply.
        overhead = self.counter.exact(_free_prompt(probe)) + budget
        limit = max(request.window - budget - overhead - MARGIN, 64)
        chunks: list[str] = []
        current: list[str] = []
        used = 0
        for msg in messages:
            text = serialize_message(msg)
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

    def _attempts(
        self, call: _Call, messages: Callable[[str | None], list[dict[str, Any]]], source: str,
        budget: int, tools: Sequence[dict[str, Any]] | None, label: str,
        repair: Callable[[Sequence[str]], list[dict[str, Any]]] | None = None,
    ) -> str:
        """Ask, clean, validate, retry once with the problems named (or, under the grammar,
        ``repair`` the silent sections alone); :class:`_Rejected` after two rejections."""
        guided = call.guided
        grammar = guided.grammar if guided is not None else None
        known = Known(source + "\n" + call.reference)
        problems: list[str] = []
        text = ""
        for attempt in range(2):
            names: list[str] = []
            if attempt and repair is not None and guided is not None and repairable(problems):
                users = Known(call.users) if call.users else None
                names = sections_to_repair(text, known, users, guided.fact_groups)
            if names and repair is not None:
                msgs = repair(names)
                reply_grammar: str | None = summary_grammar(budget, only=names)
            else:
                msgs = messages("; ".join(problems) if attempt else None)
                reply_grammar = grammar
            try:
                raw, finish, ignored = self._generate(call, msgs, budget, tools, reply_grammar)
            except GrammarError as exc:
                raise _NoGrammar(str(exc)) from exc
            if grammar is not None and not names:
                if "grammar" in ignored:
                    raise _NoGrammar("the backend cannot apply grammars")
                if finish != "length" and not follows_skeleton(raw):
                    raise _NoGrammar("a reply did not follow it")
                if self.grammar_state == "auto":
                    self.grammar_state = "on"
                    log.info("%s: summaries are written under the summary grammar",
                             self.backend.info.name)
            what = f"repair of {', '.join(names)}" if names else "reply"
            log.debug("%s attempt %d %s:\n%s", label, attempt + 1, what, raw)
            # A repair is cleaned within the whole summary: a bullet it repeats from a kept
            # section is dropped as any repeated line is.
            text, notes = clean_summary(
                splice(text, raw, names) if names else raw, known, source
            )
            if names:
                notes.insert(0, "asked again for " + ", ".join(names))
            if notes:
                log.info("%s attempt %d: %s", label, attempt + 1, "; ".join(notes))
            problems = validate_summary(
                text, source=source, budget=budget + BUDGET_TOLERANCE,
                count=self.counter.text, finish_reason=finish, user_rules=call.rules,
                reference=call.reference, user_text=call.users,
            )
            if not problems:
                return text.strip()
            call.out.rejected.append("; ".join(problems))
            log.info("%s attempt %d rejected: %s", label, attempt + 1, "; ".join(problems))
        raise _Rejected("; ".join(problems))

    def _generate(
        self, call: _Call, messages: list[dict[str, Any]], budget: int,
        tools: Sequence[dict[str, Any]] | None, grammar: str | None,
    ) -> tuple[str, str, tuple[str, ...]]:
        """(reply, finish reason, options ignored); a free reply that loops stops early."""
        out, cancel = call.out, call.cancel
        if cancel is not None and cancel.cancelled:
            raise SummaryCancelled
        pieces: list[str] = []
        finish = "stop"
        ignored: tuple[str, ...] = ()
        out.calls += 1
        options = GenerationOptions(
            max_tokens=budget, temperature=0.0, stop=("[User]:",), grammar=grammar
        )
        stream = self.backend.generate(
            messages, options, tools=tools, cancel=cancel, on_prefill=self.on_prefill
        )
        for event in stream:
            if event.delta:
                pieces.append(event.delta)
                if grammar is None and "\n" in event.delta and _looping("".join(pieces)):
                    finish = "repetition"  # rejected anyway: do not wait for max_tokens
                    if isinstance(stream, Generator):
                        stream.close()
                    break
            if event.result is not None:
                finish = event.result.finish_reason
                ignored = event.result.ignored
                out.prompt_evaluated += event.result.prompt_evaluated
                out.prompt_reused += event.result.prompt_reused
        if finish == "cancelled" or (cancel is not None and cancel.cancelled):
            raise SummaryCancelled
        return "".join(pieces), finish, ignored


def _prompt_tokens(
    be: LLMBackend, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
) -> list[int]:
    """The prompt's tokens (incrementally when the backend can)."""
    text = be.render_prompt(messages, tools)
    return be.tokenize_prompt(text) if isinstance(be, KVCacheAware) else be.tokenize(text)


def _free_prompt(ask: str) -> list[dict[str, Any]]:
    """A free-prompt request: the summarizer's system prompt, then ``ask``."""
    return [{"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": ask}]


def _looping(text: str) -> bool:
    """True when a substantial line already appeared three times (a degenerate loop)."""
    lines = [line.strip() for line in text.splitlines() if len(line.strip()) >= 24]
    return bool(lines) and Counter(lines).most_common(1)[0][1] >= 3


def _words(budget: int) -> int:
    return int(budget * WORDS_PER_TOKEN)
