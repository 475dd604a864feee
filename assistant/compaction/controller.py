# Over 500 lines: the one entry point of context management; all paths share one view and facts.
"""The single entry point of context management (docs/COMPACTION.md, `compaction/controller.py`)."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from assistant.compaction import carry, context
from assistant.compaction.ahead import AHEAD_FILL, Precomputed, SummaryCache, span_digests
from assistant.compaction.budget import minimal_summary
from assistant.compaction.compactor import (
    CompactionJob,
    CompactionOutcome,
    Compactor,
    Status,
)
from assistant.compaction.context import View
from assistant.compaction.context_render import (
    focus_history,
    is_output,
    latest_user_index,
    render_history,
    sticky_focus_start,
)
from assistant.compaction.events import (
    CompactionCancelled,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    ContextEvent,
    PruneEvent,
    TrimEvent,
)
from assistant.compaction.facts import FactsCache, State, state_of
from assistant.compaction.prune import count_user_turns, plan_prune
from assistant.compaction.recall import Recall, recall_budget, recall_room
from assistant.compaction.request import CallRequest, MessageFit, PreparedRequest
from assistant.compaction.summary import ExtractiveSummarizer, ModelSummarizer, Summarizer
from assistant.compaction.tokens import Memo, TokenCounter
from assistant.compaction.view import ViewBuilder
from assistant.compaction.visibility import pending_start
from assistant.config import CompactionSwitches, EffectivePolicy
from assistant.conversation import (
    MAX_SHOWN_CHARS,
    CompactionReason,
    CompactionRecord,
    Conversation,
    Message,
)
from assistant.llm.base import (
    EncodedPrompt,
    GenerationCancelled,
    KVCacheAware,
    LLMBackend,
    LLMError,
    PromptCounter,
)

__all__ = [
    "CallRequest",
    "ContextController",
    "ContextTooLargeError",
    "MessageFit",
    "PreparedRequest",
]

log = logging.getLogger("assistant.compaction")

#: How the last prompt rendered earlier turns: (id of its latest user message, whether recall's
#: excerpts were beside it), or None when it showed them as built.
_Render = tuple[str | None, bool] | None


class _Sent(NamedTuple):
    """The last prompt sent: what llama.cpp holds in its KV cache, which an in-context
    summary reuses."""

    conv_id: int
    pruned: frozenset[str]
    cuts: dict[str, str]
    render: _Render


@dataclass
class _Memo:
    """What the controller remembers of the last calls. :meth:`ContextController.preview`
    runs on a copy and puts this one back, so a field added here is kept by it too."""

    sent: _Sent | None = None
    render: _Render = None
    #: (id of the conversation, ids of the cut outputs) last reported (:class:`TrimEvent`).
    trims: tuple[int, frozenset[str]] = (0, frozenset())
    #: The outputs cut in the last prompt built.
    cuts: dict[str, str] = field(default_factory=dict)
    #: Per chat, where the last focused call's history started: (index in the rendered
    #: prompt, digest of the prompt up to it), so the next calls share the prefix.
    anchors: dict[int, tuple[int, str]] = field(default_factory=dict)

    def copy(self) -> _Memo:
        return replace(self, cuts=dict(self.cuts), anchors=dict(self.anchors))


class _WouldCompact(Exception):
    """A read-ahead's request would need a compaction (:meth:`ContextController.preview`)."""


class ContextTooLargeError(LLMError):
    """The prompt does not fit and compaction could not fix it (``detail`` says why)."""

    MESSAGE = (
        "Context too large; compaction failed. Older turns can be summarized and old tool "
        "outputs cleared, but the system prompt, the tool descriptions and your newest "
        "message cannot. Use /compact to retry, or shorten them."
    )

    def __init__(self, detail: str = "") -> None:
        self.detail = detail
        super().__init__(self.MESSAGE)


class ContextController:
    def __init__(
        self,
        backend: PromptCounter,
        policy: Callable[[], EffectivePolicy],
        *,
        switches: Callable[[], CompactionSwitches] = CompactionSwitches,
        on_event: Callable[[ContextEvent], None] | None = None,
        summarizer: Summarizer | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.backend = backend
        self.policy = policy
        #: The switches in force: prune, auto_compact, compact_on_overflow, recall, and
        #: earlier_as_notes (earlier turns' tool calls as notes, earlier one-line answers left
        #: out beside recall's excerpts: :mod:`.context_render`, docs/ANSWERS.md; the in-context
        #: summary and the record's token counts use the prompt as rendered).
        self.switches = switches
        self.on_event = on_event
        self.counter = counter or TokenCounter(backend)
        if summarizer is None:  # the model writes summaries when there is one to ask
            summarizer = (
                ModelSummarizer(backend, self.counter)
                if isinstance(backend, LLMBackend)
                else ExtractiveSummarizer(self.counter)
            )
        self.summarizer: Summarizer = summarizer
        #: Prompt evaluation of a summary written inside a turn: (done, total) tokens, so the
        #: window shows it like a prompt being read (set by whoever builds the agent).
        self.on_summary_prefill: Callable[[int, int], None] | None = None
        self._quiet = False
        if isinstance(summarizer, ModelSummarizer):
            summarizer.on_prefill = self._summary_prefill
        #: Summaries written ahead of time (:meth:`precompute`), used when their span is
        #: unchanged at the threshold.
        self.summary_cache = SummaryCache()
        #: Whether a compaction inside a turn takes the code's summary when none written
        #: ahead matches, leaving the model's to idle time (:meth:`precompute`; the service
        #: sets it).
        self.defer_model: Callable[[], bool] = lambda: False
        #: Brings back excerpts of the whole chat beside the latest question (None: off;
        #: :func:`assistant.engine.attach_recall` gives it one).
        self.recall: Recall | None = None
        #: Beside recall's excerpts, only this many tokens of the history before the latest
        #: user message (the latest exchange always) go into that call (None: all of it;
        #: :func:`.context_render.focus_history`).
        self.focus_tokens: Callable[[], int | None] = lambda: None
        self._overhead_memo: Memo[tuple[str, str], int] = Memo(64)
        #: The facts of the conversation (kept messages, calls, unanswered ids, files),
        #: computed once per state and shared by the rules (:mod:`.facts`).
        self.facts = FactsCache()
        self.views = ViewBuilder(self.counter, self.facts)
        self.compactor = Compactor(
            self.counter, lambda: self.summarizer, self._measure, self._chat_prefix,
            # The summary's own prompt is history: it is written within the target.
            lambda: min(self.policy().window, self.backend.info.context_window),
            self.summary_cache, self.facts, lambda: self.defer_model(),
        )
        #: Conversation states where compaction did not help (never retried automatically).
        self._no_retry: set[State] = set()
        self._overflow_done: set[State] = set()
        self._memo = _Memo()
        #: Inside :meth:`preview`: a compaction it would need ends it instead.
        self._previewing = False

    # -- the view ------------------------------------------------------------------------
    def view(self, conv: Conversation) -> View:
        """Cleared notes and cuts of the kept messages (:meth:`.view.ViewBuilder.view`)."""
        pol = self.policy()
        return self.views.view(conv, self.message_cap(), latest_cap=pol.limit - pol.reserve)

    def message_cap(self) -> int:
        """Most tokens one message is shown with: 3/4 of the room beside the reply in the
        hard limit (a longer one is cut, head and tail, and kept whole in the chat)."""
        pol = self.policy()
        return max((pol.limit - pol.reserve) * 3 // 4, 1)

    def build_messages(self, conv: Conversation, system_prompt: str) -> list[Message]:
        """System prompt + summary (synthetic user message) + kept messages, as shown."""
        kept = self.facts.of(conv).kept
        return context.build_context(conv, system_prompt, kept=kept, view=self.view(conv))

    def overhead(self, system_prompt: str, tools: Sequence[dict[str, Any]] | None) -> int:
        """Tokens of the system prompt, tool schemas and generation prompt (memoized)."""
        key = (system_prompt, json.dumps(list(tools or []), sort_keys=True, default=str))
        return self._overhead_memo.get(key, lambda: self.counter.overhead(system_prompt, tools))

    def estimate(
        self, conv: Conversation, system_prompt: str, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        """Prompt tokens from memoized segment counts (exact for ChatML templates)."""
        msgs = self.build_messages(conv, system_prompt)[1:]
        return self.overhead(system_prompt, tools) + sum(self.counter.message(m) for m in msgs)

    def _request(
        self, call: CallRequest, policy: EffectivePolicy, *, trim: bool = True,
        exact: bool = True,
    ) -> PreparedRequest:
        """The prompt as built, counted exactly (encoded), or with ``exact`` False from its
        memoized segments (``prompt`` None: see :meth:`prepare`), unless it passes the
        hard limit: cutting outputs to fit rests on exact counts."""
        conv, system_prompt, tools = call.conv, call.system_prompt, call.tools
        base_view = self.view(conv)
        summed = None if exact else self.overhead(system_prompt, tools)
        fitted = self.views.build(conv, system_prompt, tools, base_view, overhead=summed)
        limit = policy.limit  # outputs are cut only to fit the hard limit
        over = fitted.tokens + policy.reserve > limit
        if over and fitted.prompt is None:
            fitted = self.views.build(conv, system_prompt, tools, base_view)
            over = fitted.tokens + policy.reserve > limit
        if trim and over:
            fitted = self.views.fit(conv, system_prompt, tools, fitted, limit - policy.reserve)
        if base_view.trims:  # messages too long for any prompt: cut in every view
            shown = {m.id: m for m in fitted.built}
            for m in self.facts.of(conv).kept:
                if m.id in base_view.trims and m.id in shown:
                    after = self.counter.message(shown[m.id])
                    fitted.trimmed[m.id] = (self.counter.message(m), after)
        if trim and (over or base_view.trims):
            self._report_trims(conv, fitted.trimmed)
        self._memo.cuts = dict(fitted.view.trims)
        built, n = fitted.built, fitted.tokens
        base = self.overhead(system_prompt, None)
        with_tools = self.overhead(system_prompt, tools) if tools else base
        summary = self.counter.message(built[1]) if conv.last_compaction is not None else 0
        segments = {"system": base, "tools": with_tools - base, "summary": summary}
        _split_rest(segments, n, sum(self.counter.message(m) for m in built if m.role == "tool"))
        return PreparedRequest(
            messages=fitted.messages, prompt_tokens=n, window=limit, target=self.policy().window,
            reserve=min(policy.reserve, max(limit - n, 0)), segments=segments,
            trimmed=fitted.trimmed, prompt=fitted.prompt,
        )

    def _report_trims(self, conv: Conversation, trimmed: dict[str, tuple[int, int]]) -> None:
        """A :class:`TrimEvent` when the set of cut outputs changed since the last call."""
        ids = frozenset(trimmed)
        if ids and self._memo.trims != (id(conv), ids):
            before = sum(b for b, _ in trimmed.values())
            after = sum(a for _, a in trimmed.values())
            log.info("Cut %d unanswered tool output(s) to fit: %d -> %d tokens",
                     len(ids), before, after)
            self._emit(TrimEvent(tuple(sorted(ids)), before, after))
        self._memo.trims = (id(conv), ids)

    def _measure(
        self, conv: Conversation, system_prompt: str, summary: str, kept: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
    ) -> int:
        """The prompt with ``summary`` before ``kept``, as the next call writes it (the
        shorter of as built and as rendered: :meth:`_adopt`). While segments add up it is
        counted from them, as :meth:`prepare` decides; the prompt sent is encoded once,
        when it is sent, not here as built and again as rendered."""
        built = context.build_context(
            conv, system_prompt, summary=summary, kept=kept, view=self.view(conv)
        )
        messages = context.to_openai(built)
        summed = self.counter.additive
        tokens, _ = self._count(system_prompt, tools, messages, summed=summed)
        # As the next prompt shows it (before recall's excerpts).
        if self.switches().earlier_as_notes:
            rendered = _as_notes(messages, kept)
            if rendered != messages:
                tokens = min(tokens, self._count(system_prompt, tools, rendered, summed=summed)[0])
        return tokens

    def measure(self, call: CallRequest, *, as_next: bool = False) -> PreparedRequest:
        """The prompt as it stands (as built), counted exactly and split into segments.
        Changes nothing: no pruning, compaction or cut is made, recorded or reported.
        Encoded once, as :meth:`prepare` does. ``as_next``: as the next call will write
        it, every turn shown now an earlier one (the context bar between calls)."""
        cuts = self._memo.cuts
        try:
            pol = self.policy()
            req = self._request(call, pol, trim=False, exact=not self.counter.additive)
        finally:
            self._memo.cuts = cuts
        if as_next and self.switches().earlier_as_notes:
            # The next prompt writes every turn shown now as an earlier one (its user
            # message comes after them): count them as it will.
            kept = self.facts.of(call.conv).kept
            messages = _as_notes(req.messages, kept, latest=len(req.messages))
            if messages != req.messages:
                self._adopt(req, messages, call, pol)
        if req.prompt is None and not self._checked(call, req):
            return self.measure(call, as_next=as_next)  # on exact counts now
        return req

    def message_fit(self, call: CallRequest, text: str) -> MessageFit:
        """Whether ``text`` as the next user message fits the hard limit whole, beside the
        smallest summary (the latest message is never cut)."""
        pol = self.policy()
        window = min(pol.limit, self.backend.info.context_window)
        tokens = self.counter.message(Message(role="user", content=text))
        conv = call.conv
        before = bool(self.facts.of(conv).kept) or conv.last_compaction is not None
        summary = minimal_summary(pol, self.counter.text) if before else 0
        room = window - pol.reserve - self.overhead(call.system_prompt, call.tools) - summary
        if len(text) > MAX_SHOWN_CHARS:  # counted on what is shown of it: scale to the whole
            tokens = tokens * len(text) // MAX_SHOWN_CHARS
        return MessageFit(tokens, max(room, 0))

    # -- the per-call path ---------------------------------------------------------------
    def prepare(self, call: CallRequest) -> PreparedRequest:
        """Prune, count exactly, compact when ``prompt + reserve`` passes the call's window
        (:meth:`turn_policy`), then cut unanswered outputs that still do not fit the hard
        limit; recall's excerpts and the earlier turns' notes go in after.

        The prompt is encoded once, the one sent (its tokens go to ``generate``): while the
        template's segments add up (:attr:`TokenCounter.additive`, ChatML), the decisions
        are made on the memoized segment sums, the changed messages (recall's question,
        the notes) counted alone, and the sum is checked against the one exact count. A
        sum near a limit is counted exactly before deciding (a compaction, a cut); one that
        differs from the exact count makes this call again on exact counts, as every call
        after it."""
        conv = call.conv
        pruned = self.prune(conv) if self.switches().prune else 0
        pol = self.turn_policy(call)
        req, record, notices = self._prepare(call, pol, exact=not self.counter.additive)
        if req.prompt is None and not self._checked(call, req):  # decided on sums
            req, again, notices = self._prepare(call, pol, exact=True)
            record = record or again
        req.pruned_tokens = pruned
        req.compaction = record
        req.notices = notices
        self._remember_sent(conv, req)
        return req

    def _checked(self, call: CallRequest, req: PreparedRequest) -> bool:
        """Encode ``req``'s messages, the one whole-prompt encode of a request counted
        from its segments; whether the exact count is the sum it was decided on (else
        every prompt is counted whole from now on: :attr:`TokenCounter.additive`)."""
        prompt = self.counter.encode(req.messages, call.tools)
        if prompt.count == req.prompt_tokens:
            req.prompt = prompt
            return True
        self.counter.additive = False
        log.warning("Segment sums differ from the exact count (%d, %d tokens): every "
                    "prompt is counted whole from now on", req.prompt_tokens, prompt.count)
        return False

    def _prepare(
        self, call: CallRequest, pol: EffectivePolicy, *, exact: bool
    ) -> tuple[PreparedRequest, CompactionRecord | None, list[str]]:
        """:meth:`prepare` after pruning: the request, the compaction made, the notices."""
        conv = call.conv
        req = self._request(call, pol, trim=False, exact=exact)
        notices: list[str] = []
        record: CompactionRecord | None = None
        if req.prompt is None and req.prompt_tokens + pol.reserve > pol.window:
            req = self._request(call, pol, trim=False)  # compaction decided on exact counts
        if req.prompt_tokens + pol.reserve > pol.window:
            if not self.switches().auto_compact:
                if req.prompt_tokens + pol.reserve > pol.limit:
                    notices.append(
                        f"The context is nearly full ({req.prompt_tokens:,} of {pol.limit:,} "
                        "tokens) and automatic compaction is off; use /compact."
                    )
            elif state_of(conv) in self._no_retry:
                log.info("Compaction did not shrink this chat earlier; not retried")
            elif self._previewing:
                raise _WouldCompact
            else:
                record = self._run(call, CompactionReason.THRESHOLD, req.prompt_tokens, pol).record
        if record is not None or req.prompt_tokens + pol.reserve > pol.limit or self._memo.cuts:
            req = self._request(call, pol, exact=exact)  # else: the same request again
        if pol.limit > req.prompt_tokens > pol.limit - pol.reserve:
            # At or over the window the backend refuses the call before reading a token,
            # and the overflow message says what does not fit: a note here would be wrong.
            notices.append(
                f"The prompt ({req.prompt_tokens:,} tokens) leaves less than the "
                f"reserve of {pol.reserve:,} for the reply."
            )
        req = self._rendered(call, self._with_recall(call, req, pol), pol)
        return req, record, notices

    def turn_policy(self, call: CallRequest) -> EffectivePolicy:
        """The policy for this call: the target, grown up to the hard limit when the
        unanswered turn does not fit in it (:meth:`~assistant.config.EffectivePolicy.for_turn`)."""
        pol = self.policy()
        if pol.limit <= pol.window:
            return pol
        counts = self._counts(call.conv)
        start = pending_start(self.facts.of(call.conv).kept)
        beside = self.overhead(call.system_prompt, call.tools)
        if start > 0 or call.conv.last_compaction is not None:
            beside += minimal_summary(pol, self.counter.text)
        return pol.for_turn(sum(counts[start:]), beside)

    def _remember_sent(self, conv: Conversation, req: PreparedRequest) -> None:
        pruned = frozenset(m.id for m in self.facts.of(conv).kept if m.pruned)
        self._memo.sent = _Sent(id(conv), pruned, dict(self._memo.cuts), self._memo.render)

    def prune(self, conv: Conversation) -> int:
        """Apply the prune rule (see :mod:`.prune`); returns the tokens freed."""
        pol = self.policy()
        facts = self.facts.of(conv)
        plan = plan_prune(
            facts.kept, self.counter, protect=pol.protect, minimum=pol.minimum,
            user_turns=count_user_turns(conv.messages), cleared_size=self.views.cleared_size(conv),
            waiting=facts.unanswered,
        )
        if not plan.applies:
            return 0
        conv.mark_pruned(list(plan.message_ids), plan.tokens_freed)
        log.info("Pruned %d old tool result(s): %d tokens reclaimed", len(plan.message_ids),
                 plan.tokens_freed)
        self._emit(PruneEvent(plan.message_ids, plan.tokens_freed))
        return plan.tokens_freed

    # -- forced paths ------------------------------------------------------------------
    def compact(self, call: CallRequest, reason: CompactionReason) -> CompactionRecord | None:
        """Summarize older turns now (``call.focus``: what to keep most). None when
        cancelled, failed or nothing to do."""
        switch = {CompactionReason.OVERFLOW: "compact_on_overflow",
                  CompactionReason.THRESHOLD: "auto_compact"}.get(reason)
        if switch is not None and not getattr(self.switches(), switch):
            log.info("Compaction (%s) skipped: switched off", reason)
            return None
        before = self._request(call, self.policy(), trim=False)
        return self._run(call, CompactionReason(reason), before.prompt_tokens,
                         focus=call.focus).record

    def handle_overflow(self, call: CallRequest) -> PreparedRequest:
        """After ContextOverflowError: compact and return the retry; ContextTooLargeError
        when off, failed or already done for this state (no loop), GenerationCancelled."""
        pol = self.turn_policy(call)
        conv = call.conv
        state = state_of(conv)
        if not self.switches().compact_on_overflow:
            raise ContextTooLargeError("compaction on overflow is switched off")
        if state in self._overflow_done:
            raise ContextTooLargeError("already compacted once for this request")
        self._overflow_done.add(state)
        before = self._request(call, pol, trim=False)
        outcome = self._run(call, CompactionReason.OVERFLOW, before.prompt_tokens, pol)
        if outcome.status == Status.CANCELLED:
            raise GenerationCancelled("Compaction cancelled")
        if outcome.record is None:
            raise ContextTooLargeError(outcome.error or "the summary did not make it smaller")
        self._overflow_done.add(state_of(conv))
        req = self._rendered(call, self._with_recall(call, self._request(call, pol), pol), pol)
        req.compaction = outcome.record
        self._remember_sent(conv, req)
        return req

    def _with_recall(
        self, call: CallRequest, req: PreparedRequest, pol: EffectivePolicy
    ) -> PreparedRequest:
        """``req`` with the recall block in its latest user message, counted as ``req`` was."""
        if self.recall is None or not self.switches().recall:
            return req
        budget = min(recall_budget(pol), recall_room(pol, req.prompt_tokens))
        messages = list(req.messages)
        kept = self.facts.of(call.conv).kept
        block = self.recall.apply(call.conv, messages, budget, kept,
                                  shown=self._shown_beside_excerpts(call.conv, kept))
        if block is None:
            return req
        tokens, prompt = self._count(call.system_prompt, call.tools, messages,
                                     summed=req.prompt is None)
        if tokens > pol.window - pol.reserve // 2:  # counted alone it fitted; joined not
            log.info("Recall block left out: the prompt would be %d tokens", tokens)
            return req
        added = tokens - req.prompt_tokens
        _set_prompt(req, messages, tokens, prompt, pol)
        req.segments["conversation"] = req.segments.get("conversation", 0) + added
        req.recall = block
        log.info("Recall: %d excerpt(s), %d tokens", len(block.excerpts), added)
        return req

    def _shown_beside_excerpts(
        self, conv: Conversation, kept: Sequence[Message]
    ) -> Callable[[Sequence[dict[str, Any]]], list[dict[str, Any]]] | None:
        """What a call with recall's excerpts shows of its prompt, as :meth:`_rendered` cuts
        it (None: all), so recall judges "still in the prompt" on that."""
        if not self.switches().earlier_as_notes:
            return None
        return lambda messages: self._render(conv, messages, kept, excerpts=True)[1]

    def _render(
        self, conv: Conversation, messages: Sequence[dict[str, Any]], kept: Sequence[Message],
        excerpts: bool,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int | None]:
        """``messages`` with the history before the latest user message written as
        :func:`.context_render.render_history` does and, beside recall's ``excerpts``, cut to
        :attr:`focus_tokens` (:func:`.context_render.focus_history`): (as rendered, as
        shown, where the focused history starts)."""
        first = len(messages) - len(kept)
        rendered = _as_notes(messages, kept, excerpts=excerpts)
        focus = self.focus_tokens() if excerpts else None
        if focus is None:
            return rendered, rendered, None
        start = self._focus_start(conv, rendered, first, focus)
        return rendered, focus_history(rendered, first=first, tokens=focus,
                                       count=self.counter.segment_of, start=start), start

    def _focus_start(
        self, conv: Conversation, view: list[dict[str, Any]], first: int, focus: int
    ) -> int:
        """Where the focused history of ``view`` starts: the chat's anchor while the prompt
        up to it is unchanged (:func:`.context_render.sticky_focus_start`)."""
        anchor = None
        held = self._memo.anchors.get(id(conv))
        if (held is not None and first <= held[0] < len(view)
                and _digest(view[1:held[0] + 1]) == held[1]):
            anchor = held[0]
        return sticky_focus_start(view, first=first, tokens=focus,
                                  count=self.counter.segment_of, anchor=anchor)

    def _anchor_focus(self, conv: Conversation, view: list[dict[str, Any]], start: int) -> None:
        """Remember ``start`` as the chat's focus anchor (not at the latest user message)."""
        last = latest_user_index(view)
        key = id(conv)
        self._memo.anchors.pop(key, None)
        if last is not None and start < last:
            self._memo.anchors[key] = (start, _digest(view[1:start + 1]))
            while len(self._memo.anchors) > 32:  # the oldest chats' go first
                del self._memo.anchors[next(iter(self._memo.anchors))]

    def _rendered(
        self, call: CallRequest, req: PreparedRequest, pol: EffectivePolicy
    ) -> PreparedRequest:
        """``req`` as :meth:`_render` shows it, counted exactly."""
        self._memo.render = None
        if not self.switches().earlier_as_notes:
            return req
        facts = self.facts.of(call.conv)
        rendered, messages, start = self._render(call.conv, req.messages, facts.kept,
                                                 req.recall is not None)
        if start is not None and len(req.messages) - len(facts.kept) > 1:
            req.segments["summary"] = 0  # the summary is not in this call
        if messages == req.messages or self._adopt(req, messages, call, pol):
            self._memo.render = (facts.latest_user_id, req.recall is not None)
            if start is not None:
                self._anchor_focus(call.conv, rendered, start)
        return req

    def _adopt(
        self, req: PreparedRequest, messages: list[dict[str, Any]], call: CallRequest,
        pol: EffectivePolicy,
    ) -> bool:
        """Make the rendered ``messages`` ``req``'s prompt, counted exactly (from their
        memoized segments when ``req`` was), unless they are longer than the prompt as
        built (compaction planned for that one; its measure takes the shorter of the two).
        Whether they were adopted."""
        count, prompt = self._count(call.system_prompt, call.tools, messages,
                                    summed=req.prompt is None)
        if count > req.prompt_tokens:
            return False
        _set_prompt(req, messages, count, prompt, pol)
        # The outputs written as notes are still tool outputs on the context bar.
        _split_rest(req.segments, count,
                    sum(self.counter.segment_of(m) for m in messages if is_output(m)))
        return True

    def _count(
        self, system_prompt: str, tools: Sequence[dict[str, Any]] | None,
        messages: list[dict[str, Any]], *, summed: bool,
    ) -> tuple[int, EncodedPrompt | None]:
        """``messages`` encoded, or (``summed``) from their memoized segments (no prompt)."""
        if summed:
            return self.counter.summed(self.overhead(system_prompt, tools), messages), None
        prompt = self.counter.encode(messages, tools)
        return prompt.count, prompt

    # -- read ahead ----------------------------------------------------------------------
    def preview(self, call: CallRequest, chat: Conversation) -> PreparedRequest | None:
        """The request :meth:`prepare` would make for ``call.conv``: ``chat`` with a draft
        as its new message, its messages copies (pruning marks them, not ``chat``'s). None
        where it would compact. Changes nothing: no event, the memos of the last call, the
        chat's focus anchor and recall's memo and index stay as they were."""
        trial = call.conv
        saved = (self.on_event, self._memo, self.facts._last)
        self._memo = self._memo.copy()
        if (anchor := self._memo.anchors.get(id(chat))) is not None:
            self._memo.anchors[id(trial)] = anchor  # the focused history as the send's
        self.on_event, self._previewing = None, True
        try:
            with self.recall.previewing(chat, trial) if self.recall else nullcontext():
                return self.prepare(call)
        except _WouldCompact:
            return None
        finally:
            self.on_event, self._memo, self.facts._last = saved
            self._previewing = False

    # -- across a restart ----------------------------------------------------------------
    def carry_out(self, conv: Conversation) -> carry.Carried:
        """What this controller holds for ``conv`` between calls (:mod:`.carry`)."""
        sent = self._memo.sent
        kept = span_digests(self.facts.of(conv).kept)
        return carry.Carried(
            leaf=conv.messages[-1].id if conv.messages else None,
            anchor=self._memo.anchors.get(id(conv)),
            sent=None if sent is None or sent.conv_id != id(conv)
            else carry.Sent(sent.pruned, dict(sent.cuts), sent.render),
            ahead=tuple(carry.usable_ahead(self.summary_cache.items(), kept)),
        )

    def carry_in(self, conv: Conversation, carried: carry.Carried) -> None:
        """Continue ``conv`` from :meth:`carry_out`'s ``carried`` (taken before a restart):
        the focus anchor (checked by its digest when used), the last prompt sent when the
        chat still ends where it did, the summaries written ahead (checked by their spans)."""
        if carried.anchor is not None:
            self._memo.anchors[id(conv)] = carried.anchor
        sent = carried.sent
        if sent is not None and carried.leaf == (conv.messages[-1].id if conv.messages
                                                   else None):
            self._memo.sent = _Sent(id(conv), sent.pruned, dict(sent.cuts), sent.render)
            self._memo.render = sent.render
        for item in reversed(carried.ahead):  # newest first: put it last
            self.summary_cache.put(item)

    # -- ahead of time -------------------------------------------------------------------
    def precompute(self, call: CallRequest) -> Precomputed | None:
        """While idle, past :data:`~.ahead.AHEAD_FILL` of the threshold: write the summary
        the next compaction needs (:mod:`.ahead`), reporting nothing and putting the KV
        cache back. None when not needed, already written, or cancelled."""
        pol = self.policy()
        conv = call.conv
        if not self.switches().auto_compact or not self.facts.of(conv).kept:
            return None
        # Whether to write ahead: the segment sum (the exact count while it adds up) is
        # enough; the prompt is encoded when it is sent.
        req = self._request(call, pol, trim=False, exact=not self.counter.additive)
        if req.prompt_tokens < AHEAD_FILL * (pol.window - pol.reserve):
            return None
        # The compaction comes with the user's next message, which its kept tail will hold:
        # plan for the chat with one more message the size of their last one.
        last = next((m for m in reversed(conv.messages) if m.role == "user"), None)
        trial = Conversation(
            messages=[*conv.messages, Message(role="user", content=last.content if last else "")],
            compactions=list(conv.compactions),
        )
        be = self.backend
        state = be.save_state() if isinstance(be, KVCacheAware) else None
        job = self._job(call.on(trial), CompactionReason.THRESHOLD, pol)
        sent = self._memo.sent
        if sent is not None and sent.conv_id == id(conv):  # the trial chat was sent as this one
            self._memo.sent = sent._replace(conv_id=id(trial))
        self._quiet = True
        try:
            got = self.compactor.ahead(job)
        finally:
            self._quiet = False
            self._memo.sent = sent
            if state is not None and state.tokens and isinstance(be, KVCacheAware):
                be.load_state(state)
        if got is not None:
            self.summary_cache.put(got)
            ids = [m.id for m in self.facts.of(trial).kept]
            log.info("Summary written ahead of time in %.1fs (%d message(s) kept after it)",
                     got.seconds, len(ids) - ids.index(got.first_kept_id))
        return got

    def _summary_prefill(self, done: int, total: int) -> None:
        if not self._quiet and self.on_summary_prefill is not None:
            self.on_summary_prefill(done, total)

    # -- internals -----------------------------------------------------------------------
    def _counts(self, conv: Conversation) -> list[int]:
        """Each kept message's tokens as shown."""
        view = self.view(conv)  # once: it is the same for every message
        return [self.counter.message(context.shown(m, view)) for m in self.facts.of(conv).kept]

    def _job(
        self, call: CallRequest, reason: CompactionReason, pol: EffectivePolicy,
        focus: str | None = None,
    ) -> CompactionJob:
        overhead = self.overhead(call.system_prompt, call.tools)
        return CompactionJob(reason, call.conv, pol, overhead, self._counts(call.conv),
                             call.system_prompt, call.tools, focus, call.cancel)

    def _run(
        self, call: CallRequest, reason: CompactionReason, tokens_before: int,
        pol: EffectivePolicy | None = None, focus: str | None = None,
    ) -> CompactionOutcome:
        """One compaction through the :class:`Compactor`, with events and the record."""
        conv = call.conv
        job = self._job(call, reason, pol or self.policy(), focus=focus)

        def started(messages: int) -> None:
            self._emit(CompactionStarted(job.reason, tokens_before, messages=messages))

        outcome = self.compactor.run(job, tokens_before=tokens_before, on_start=started)
        if outcome.status == Status.CANCELLED:
            log.info("Compaction (%s) cancelled; the request proceeds uncompacted", job.reason)
            self._emit(CompactionCancelled(job.reason, tokens_before=tokens_before))
        elif outcome.status == Status.NOTHING:
            log.info("Compaction (%s): %s", job.reason, outcome.error)
            if job.reason != CompactionReason.THRESHOLD:
                self._emit(CompactionFailed(job.reason, outcome.error, tokens_before))
        elif outcome.status == Status.FAILED:
            log.warning("Compaction (%s) failed: %s", job.reason, outcome.error)
            self._no_retry.add(state_of(conv))
            self._emit(CompactionFailed(job.reason, outcome.error, tokens_before))
        elif outcome.record is not None:
            record = outcome.record
            conv.add_compaction(record)
            log.info(
                "Compacted (%s): %d -> %d tokens (%d reclaimed), summarizer=%s, %.2fs",
                job.reason, record.tokens_before, record.tokens_after,
                record.tokens_before - record.tokens_after, record.summarizer,
                record.duration_s,
            )
            self._emit(CompactionFinished(record))
        return outcome

    def _chat_prefix(
        self, conv: Conversation, system_prompt: str, span: Sequence[Message]
    ) -> list[dict[str, Any]]:
        """The chat prompt up to the cut as last sent, so an in-context summary starts
        with tokens llama.cpp still holds (see :meth:`ViewBuilder.as_sent`)."""
        sent = self._memo.sent if self._memo.sent and self._memo.sent.conv_id == id(conv) else None
        messages = self.views.as_sent(
            conv, system_prompt, span, None if sent is None else (sent.pruned, sent.cuts)
        )
        render = sent.render if sent is not None else (
            (None, False) if self.switches().earlier_as_notes else None)
        if render is None:  # the last prompt showed every turn as built
            return messages
        # Rendered as that prompt was: up to its latest user message (past the span when
        # it came after), one-line answers left out when it had recall's excerpts.
        latest, excerpts = render
        first = len(messages) - len(span)
        stop = next((first + i for i, m in enumerate(span) if m.id == latest), len(messages))
        return _as_notes(messages, span, excerpts=excerpts, latest=stop)

    def _emit(self, event: ContextEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)


def _set_prompt(
    req: PreparedRequest, messages: list[dict[str, Any]], tokens: int,
    prompt: EncodedPrompt | None, pol: EffectivePolicy,
) -> None:
    """``req`` sends ``messages`` (``tokens``, encoded as ``prompt``) from now on."""
    req.messages = messages
    req.prompt_tokens = tokens
    req.prompt = prompt
    req.reserve = min(pol.reserve, max(pol.limit - tokens, 0))


def _split_rest(segments: dict[str, int], tokens: int, outputs: int) -> None:
    """The prompt's ``tokens`` besides system, tools and summary: conversation and outputs."""
    rest = max(tokens - sum(segments.get(k, 0) for k in ("system", "tools", "summary")), 0)
    segments["conversation"] = rest - min(outputs, rest)
    segments["tool_outputs"] = min(outputs, rest)


def _as_notes(
    messages: Sequence[dict[str, Any]], kept: Sequence[Message], *, excerpts: bool = False,
    latest: int | None = None,
) -> list[dict[str, Any]]:
    """``messages``, ending with ``kept`` as built, with the earlier turns' tool calls as
    notes (:func:`.context_render.render_history`); the calls the user ran (``/read``) are
    noted as run at their request."""
    user_calls = {c.id for m in kept if m.initiated_by == "user" for c in m.tool_calls}
    return render_history(messages, first=len(messages) - len(kept), excerpts=excerpts,
                          user_calls=user_calls, latest=latest)


def _digest(messages: Sequence[dict[str, Any]]) -> str:
    """A digest of ``messages`` (as rendered): equal digests, the same prompt text."""
    text = json.dumps(list(messages), sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
