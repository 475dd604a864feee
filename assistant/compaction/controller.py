"""The single entry point of context management.

``prepare`` runs before every model call: prune old tool outputs (layer 1), count the exact
prompt with the model's tokenizer, and compact first when ``prompt + reserve > window``
(layer 2). ``compact`` is the forced path (``/compact [focus]``, overflow); the agent calls
``handle_overflow`` when the backend raises :class:`ContextOverflowError` and retries once
with what it returns.

A compaction: cut point (:mod:`.cut_point`) -> ``before_compact`` hook -> summary
(:mod:`.summarizer`, validated, extractive fallback) -> verbatim record appended by code
(:mod:`.extractive`) -> the new prompt is counted exactly -> stored only if it is smaller
than before (otherwise reported as :class:`CompactionFailed` and not retried for the same
conversation state) -> ``after_compact`` hook. Cancelling (``CancelToken``) aborts the
summary and the call proceeds uncompacted; errors are logged and reported, never swallowed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assistant.compaction import context
from assistant.compaction.cut_point import find_cut
from assistant.compaction.events import (
    CompactionCancelled,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    ContextEvent,
    PruneEvent,
)
from assistant.compaction.extractive import (
    collect_state,
    compose_summary,
    model_part,
    render_mechanical,
)
from assistant.compaction.file_tracking import FileOps, extract_file_ops
from assistant.compaction.prompts import (
    MECHANICAL_MARKER,
    SUMMARY_HEADER,
    SUMMARY_HEADER_SHORT,
)
from assistant.compaction.prune import count_user_turns, plan_prune
from assistant.compaction.summarizer import (
    ExtractiveSummarizer,
    ModelSummarizer,
    Summarizer,
    SummaryCancelled,
    SummaryRequest,
)
from assistant.compaction.tokens import TokenCounter, truncate_to_tokens
from assistant.config import EffectivePolicy
from assistant.conversation import CompactionRecord, Conversation, Message
from assistant.llm.base import (
    CancelToken,
    GenerationCancelled,
    LLMBackend,
    LLMError,
    PromptCounter,
)

log = logging.getLogger("assistant.compaction")

Reason = Literal["threshold", "overflow", "manual"]
#: Share of the summary budget for the verbatim record (files, constraints, requests).
MECHANICAL_SHARE = 0.6
#: Tokens kept free beside the summary for its message template.
SUMMARY_SLACK = 16
MIN_MODEL_BUDGET = 32
#: At summary budgets up to this many tokens the summary uses the short header, and one that
#: fell back to the extractive summary gives the verbatim record (constraints, files,
#: requests) all of its room: the extractive part only restates the same
#: messages, less faithfully, and small windows cannot afford both.
SMALL_SUMMARY_BUDGET = 256
EXTRACTIVE_FLOOR = 0


class ContextTooLargeError(LLMError):
    """The prompt does not fit and compaction could not fix it (``detail`` says why)."""

    MESSAGE = "Context too large; compaction failed. Use /compact to retry."

    def __init__(self, detail: str = "") -> None:
        self.detail = detail
        super().__init__(self.MESSAGE)


@dataclass
class PreparedRequest:
    """What to send: the messages exactly as the model will see them."""

    messages: list[dict[str, Any]]
    prompt_tokens: int
    window: int
    pruned_tokens: int = 0
    compaction: CompactionRecord | None = None
    notices: list[str] = field(default_factory=list)
    #: Room the policy leaves for the reply (``window - prompt_tokens``, at most reserve).
    reserve: int = 0
    #: "system", "tools", "summary", "conversation" -> tokens (sums to prompt_tokens).
    segments: dict[str, int] = field(default_factory=dict)

    @property
    def reply_room(self) -> int:
        return max(self.window - self.prompt_tokens, 0)


@dataclass(frozen=True)
class CompactionPreparation:
    """What ``before_compact`` hooks see."""

    reason: Reason
    focus: str | None
    to_summarize: tuple[Message, ...]
    turn_prefix: tuple[Message, ...]
    kept: tuple[Message, ...]
    tokens_before: int
    previous_summary: str | None
    files_read: tuple[str, ...]
    files_modified: tuple[str, ...]


@dataclass(frozen=True)
class BeforeCompactResult:
    """A hook's answer: cancel the compaction, or supply the summary proper itself."""

    cancel: bool = False
    summary: str | None = None


BeforeCompactHook = Callable[[CompactionPreparation], BeforeCompactResult | None]
AfterCompactHook = Callable[[CompactionRecord], None]


def _pruned_ids(conv: Conversation) -> frozenset[str]:
    return frozenset(m.id for m in conv.kept_messages() if m.pruned)


class ContextController:
    def __init__(
        self,
        backend: PromptCounter,
        policy: Callable[[], EffectivePolicy],
        *,
        prune_enabled: Callable[[], bool] = lambda: True,
        auto_compact: Callable[[], bool] = lambda: True,
        compact_on_overflow: Callable[[], bool] = lambda: True,
        on_event: Callable[[ContextEvent], None] | None = None,
        summarizer: Summarizer | None = None,
        before_compact: BeforeCompactHook | None = None,
        after_compact: AfterCompactHook | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.backend = backend
        self.policy = policy
        self.prune_enabled = prune_enabled
        self.auto_compact = auto_compact
        self.compact_on_overflow = compact_on_overflow
        self.on_event = on_event
        self.counter = counter or TokenCounter(backend)
        if summarizer is None:  # the model writes summaries when there is one to ask
            summarizer = (
                ModelSummarizer(backend, self.counter)
                if isinstance(backend, LLMBackend)
                else ExtractiveSummarizer(self.counter)
            )
        self.summarizer: Summarizer = summarizer
        self.before_compact = before_compact
        self.after_compact = after_compact
        self._overhead_memo: dict[tuple[str, str], int] = {}
        #: Conversation states where compaction did not help (never retried automatically).
        self._no_retry: set[tuple[int, int, int]] = set()
        self._overflow_done: set[tuple[int, int, int]] = set()
        #: (id of the conversation, ids of pruned results) of the last prompt sent: what
        #: llama.cpp holds in its KV cache, which an in-context summary reuses.
        self._sent_view: tuple[int, frozenset[str]] | None = None

    # -- building --------------------------------------------------------------------
    def build_messages(self, conv: Conversation, system_prompt: str) -> list[Message]:
        """System prompt + summary (synthetic user message) + kept messages."""
        return context.build_context(conv, system_prompt)

    def overhead(self, system_prompt: str, tools: Sequence[dict[str, Any]] | None) -> int:
        """Tokens of the system prompt, tool schemas and generation prompt (memoized)."""
        key = (system_prompt, json.dumps(list(tools or []), sort_keys=True, default=str))
        got = self._overhead_memo.get(key)
        if got is None:
            if len(self._overhead_memo) > 64:
                self._overhead_memo.clear()
            got = self.counter.overhead(system_prompt, tools)
            self._overhead_memo[key] = got
        return got

    def estimate(
        self, conv: Conversation, system_prompt: str, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        """Prompt tokens from memoized segment counts (exact for ChatML templates)."""
        msgs = self.build_messages(conv, system_prompt)[1:]
        return self.overhead(system_prompt, tools) + sum(self.counter.message(m) for m in msgs)

    def _request(
        self,
        conv: Conversation,
        system_prompt: str,
        tools: Sequence[dict[str, Any]] | None,
        policy: EffectivePolicy,
    ) -> PreparedRequest:
        built = self.build_messages(conv, system_prompt)
        msgs = context.to_openai(built)
        n = self.counter.exact(msgs, tools)
        base = self.overhead(system_prompt, None)
        with_tools = self.overhead(system_prompt, tools) if tools else base
        summary = self.counter.message(built[1]) if conv.last_compaction is not None else 0
        segments = {
            "system": base,
            "tools": with_tools - base,
            "summary": summary,
            "conversation": max(n - with_tools - summary, 0),
        }
        return PreparedRequest(
            messages=msgs,
            prompt_tokens=n,
            window=policy.window,
            reserve=min(policy.reserve, max(policy.window - n, 0)),
            segments=segments,
        )

    # -- the per-call path ---------------------------------------------------------------
    def prepare(
        self,
        conv: Conversation,
        *,
        system_prompt: str,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
    ) -> PreparedRequest:
        """Prune, count exactly, compact when ``prompt + reserve > window``."""
        pol = self.policy()
        pruned = self.prune(conv) if self.prune_enabled() else 0
        req = self._request(conv, system_prompt, tools, pol)
        notices: list[str] = []
        record: CompactionRecord | None = None
        if req.prompt_tokens + pol.reserve > pol.window:
            if not self.auto_compact():
                notices.append(
                    f"The context is nearly full ({req.prompt_tokens:,} of {pol.window:,} "
                    "tokens) and automatic compaction is off; use /compact."
                )
            elif self._state(conv) in self._no_retry:
                notices.append("Compaction did not shrink this chat earlier; not retried.")
            else:
                record = self._compact(
                    conv, system_prompt, "threshold", None, tools, cancel, req.prompt_tokens
                )
                if record is not None:
                    req = self._request(conv, system_prompt, tools, pol)
                if req.prompt_tokens + pol.reserve > pol.window:
                    notices.append(
                        f"The prompt ({req.prompt_tokens:,} tokens) leaves less than the "
                        f"reserve of {pol.reserve:,} for the reply."
                    )
        req.pruned_tokens = pruned
        req.compaction = record
        req.notices = notices
        self._sent_view = (id(conv), _pruned_ids(conv))
        return req

    def prune(self, conv: Conversation) -> int:
        """Apply the prune rule (see :mod:`.prune`); returns the tokens freed."""
        pol = self.policy()
        plan = plan_prune(
            conv.kept_messages(),
            self.counter,
            protect=pol.protect,
            minimum=pol.minimum,
            user_turns=count_user_turns(conv.messages),
        )
        if not plan.applies:
            return 0
        conv.mark_pruned(list(plan.message_ids), plan.tokens_freed)
        log.info(
            "Pruned %d old tool result(s): %d tokens reclaimed",
            len(plan.message_ids),
            plan.tokens_freed,
        )
        self._emit(PruneEvent(plan.message_ids, plan.tokens_freed))
        return plan.tokens_freed

    # -- forced paths ------------------------------------------------------------------
    def compact(
        self,
        conv: Conversation,
        *,
        system_prompt: str,
        reason: Literal["threshold", "overflow", "manual"],
        focus: str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
    ) -> CompactionRecord | None:
        """Summarize older turns now. None when cancelled, failed or nothing to do."""
        if reason != "manual" and not self._switch_on(reason):
            log.info("Compaction (%s) skipped: switched off", reason)
            return None
        return self._compact(conv, system_prompt, reason, focus, tools, cancel, None)

    def handle_overflow(
        self,
        conv: Conversation,
        *,
        system_prompt: str,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
    ) -> PreparedRequest:
        """After ContextOverflowError: compact (reason "overflow") and return the retry.

        Raises :class:`ContextTooLargeError` when compaction on overflow is off, fails, or
        was already done for this conversation state (so the agent never loops), and
        :class:`GenerationCancelled` when the user cancelled the summary.
        """
        pol = self.policy()
        state = self._state(conv)
        if not self.compact_on_overflow():
            raise ContextTooLargeError("compaction on overflow is switched off")
        if state in self._overflow_done:
            raise ContextTooLargeError("already compacted once for this request")
        self._overflow_done.add(state)
        cancelled: list[bool] = []
        record = self._compact(
            conv, system_prompt, "overflow", None, tools, cancel, None, cancelled
        )
        if cancelled:
            raise GenerationCancelled("Compaction cancelled")
        if record is None:
            raise ContextTooLargeError("the summary did not make the prompt smaller")
        self._overflow_done.add(self._state(conv))
        req = self._request(conv, system_prompt, tools, pol)
        req.compaction = record
        return req

    # -- internals -----------------------------------------------------------------------
    def _chat_prefix(
        self, conv: Conversation, system_prompt: str, span: Sequence[Message]
    ) -> list[dict[str, Any]]:
        """The chat prompt up to the cut as last sent (prune state included), so an
        in-context summary starts with tokens llama.cpp still holds."""
        view = self._sent_view[1] if self._sent_view and self._sent_view[0] == id(conv) else None
        msgs = [context.system_message(system_prompt)]
        if conv.last_compaction is not None:
            msgs.append(context.summary_message(conv.last_compaction.summary))
        for m in span:
            if view is not None and m.role == "tool" and m.pruned != (m.id in view):
                m = m.model_copy(update={"pruned": m.id in view})
            msgs.append(m)
        return context.to_openai(msgs)

    def _switch_on(self, reason: Reason) -> bool:
        if reason == "overflow":
            return self.compact_on_overflow()
        if reason == "threshold":
            return self.auto_compact()
        return True

    @staticmethod
    def _state(conv: Conversation) -> tuple[int, int, int]:
        return (id(conv), len(conv.messages), len(conv.compactions))

    def _emit(self, event: ContextEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _fail(self, conv: Conversation, reason: Reason, error: str, before: int) -> None:
        log.warning("Compaction (%s) failed: %s", reason, error)
        self._no_retry.add(self._state(conv))
        self._emit(CompactionFailed(reason, error, tokens_before=before))

    def _cancelled(self, reason: Reason, before: int, cancelled: list[bool] | None) -> None:
        log.info("Compaction (%s) cancelled; the request proceeds uncompacted", reason)
        if cancelled is not None:
            cancelled.append(True)
        self._emit(CompactionCancelled(reason, tokens_before=before))

    def _compact(
        self,
        conv: Conversation,
        system_prompt: str,
        reason: Reason,
        focus: str | None,
        tools: Sequence[dict[str, Any]] | None,
        cancel: CancelToken | None,
        tokens_before: int | None,
        cancelled: list[bool] | None = None,
    ) -> CompactionRecord | None:
        started = time.perf_counter()
        pol = self.policy()
        count = self.counter.text
        kept = conv.kept_messages()
        base_idx = len(conv.messages) - len(kept)
        if tokens_before is None:
            tokens_before = self._request(conv, system_prompt, tools, pol).prompt_tokens
        if cancel is not None and cancel.cancelled:
            self._cancelled(reason, tokens_before, cancelled)
            return None
        overhead = self.overhead(system_prompt, tools)
        room = pol.window - pol.reserve - overhead - pol.summary_budget - SUMMARY_SLACK
        keep = max(0, min(pol.keep_recent, room))
        counts = [self.counter.message(m) for m in kept]
        plan = find_cut(kept, counts, keep=keep, limit=max(room, 0))
        if not plan.summarizes_anything:
            self._fail(conv, reason, "nothing to summarize: the recent messages fit", tokens_before)
            return None
        history = kept[: plan.history_end]
        prefix = kept[plan.history_end : plan.cut]
        tail = kept[plan.cut :]
        prev = conv.last_compaction
        prev_files = FileOps(list(prev.files_read), list(prev.files_modified)) if prev else None
        files = extract_file_ops(kept[: plan.cut], prev_files)
        state = collect_state(
            conv.messages[: base_idx + plan.cut],
            files,
            last_request_visible=any(m.role == "user" for m in tail),
        )
        self._emit(CompactionStarted(reason, tokens_before, messages=plan.cut))
        log.info(
            "Compacting (%s): %d tokens, %d message(s) to summarize%s",
            reason, tokens_before, plan.cut, " (split turn)" if plan.split_turn else "",
        )
        short = pol.summary_budget <= SMALL_SUMMARY_BUDGET
        fixed = count((SUMMARY_HEADER_SHORT if short else SUMMARY_HEADER) + MECHANICAL_MARKER) + 4
        mech_budget = min(int(pol.summary_budget * MECHANICAL_SHARE),
                          pol.summary_budget - fixed - MIN_MODEL_BUDGET)
        mechanical = render_mechanical(state, mech_budget, count)
        model_budget = max(pol.summary_budget - fixed - count(mechanical), MIN_MODEL_BUDGET)
        previous = model_part(prev.summary) if prev else None

        kind: Literal["model", "extractive", "hook"] = "model"
        text: str | None = None
        if self.before_compact is not None:
            prep = CompactionPreparation(
                reason=reason, focus=focus, to_summarize=tuple(history),
                turn_prefix=tuple(prefix), kept=tuple(tail), tokens_before=tokens_before,
                previous_summary=prev.summary if prev else None,
                files_read=tuple(files.read), files_modified=tuple(files.modified),
            )
            answer = self.before_compact(prep)
            if answer is not None and answer.cancel:
                self._cancelled(reason, tokens_before, cancelled)
                return None
            if answer is not None and answer.summary is not None:
                text, kind = answer.summary, "hook"
        if text is None:
            request = SummaryRequest(
                history=history, turn_prefix=prefix, previous=previous, focus=focus,
                budget=model_budget, state=state,
                window=min(pol.window, self.backend.info.context_window),
                chat=self._chat_prefix(conv, system_prompt, kept[: plan.cut]), tools=tools,
            )
            try:
                outcome = self.summarizer.summarize(request, cancel)
            except SummaryCancelled:
                self._cancelled(reason, tokens_before, cancelled)
                return None
            except Exception as exc:
                log.exception("Summarizer failed during compaction (%s)", reason)
                self._fail(conv, reason, f"summarizer error: {exc}", tokens_before)
                return None
            text, kind = outcome.text, outcome.kind
        if kind == "extractive" and short:
            roomy = render_mechanical(state, pol.summary_budget - fixed - EXTRACTIVE_FLOOR, count)
            if count(roomy) > count(mechanical):
                mechanical = roomy
                model_budget = max(pol.summary_budget - fixed - count(mechanical), 0)
        text = truncate_to_tokens(text, model_budget, count)
        summary = compose_summary(text, mechanical, short=short)
        while count(summary) > pol.summary_budget and text:
            over = count(summary) - pol.summary_budget
            text = truncate_to_tokens(text, max(count(text) - over - 4, 0), count)
            summary = compose_summary(text, mechanical, short=short)

        built = context.build_context(conv, system_prompt, summary=summary, kept=tail)
        tokens_after = self.counter.exact(context.to_openai(built), tools)
        if tokens_after >= tokens_before:
            self._fail(
                conv, reason,
                f"the prompt did not shrink ({tokens_before} -> {tokens_after} tokens)",
                tokens_before,
            )
            return None
        record = CompactionRecord(
            summary=summary,
            first_kept_id=tail[0].id if tail else None,
            last_summarized_id=kept[plan.cut - 1].id,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            reason=reason,
            count=len(conv.compactions) + 1,
            previous_summary=prev.summary if prev else None,
            files_read=list(files.read),
            files_modified=list(files.modified),
            duration_s=round(time.perf_counter() - started, 4),
            summarizer=kind,
            focus=focus,
        )
        conv.add_compaction(record)
        log.info(
            "Compacted (%s): %d -> %d tokens (%d reclaimed), summarizer=%s, %.2fs",
            reason, tokens_before, tokens_after, tokens_before - tokens_after, kind,
            record.duration_s,
        )
        self._emit(CompactionFinished(record))
        if self.after_compact is not None:
            self.after_compact(record)
        return record
