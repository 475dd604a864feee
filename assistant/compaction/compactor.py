"""Layer 2: one compaction, in four steps that each return a value (docs/COMPACTION.md)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from assistant.compaction.ahead import PREFER_SLACK, Precomputed, SummaryCache, summary_key
from assistant.compaction.budget import (
    GROWTH_SHARE,
    MIN_FILL,
    MIN_MODEL_BUDGET,
    MIN_RECORD,
    SUMMARY_SLACK,
    Budget,
    beside_latest,
    compaction_budget,
    tail_bounds,
)
from assistant.compaction.cut_point import CutPlan, find_cut, valid_cuts
from assistant.compaction.facts import FactsCache
from assistant.compaction.file_tracking import FileOps
from assistant.compaction.summary import (
    DEFERRED_NOTE,
    ExtractiveSummarizer,
    MechanicalState,
    ModelSummarizer,
    Summarizer,
    SummaryCancelled,
    SummaryOutcome,
    SummaryRequest,
    compose_summary,
    model_part,
    render_mechanical,
)
from assistant.compaction.tokens import TokenCounter, shrink_to_fit, truncate_to_tokens
from assistant.compaction.visibility import TRIM_FLOOR, current_turn_start, pending_start
from assistant.config import EffectivePolicy
from assistant.conversation import CompactionReason, CompactionRecord, Conversation, Message
from assistant.llm.base import CancelToken

log = logging.getLogger("assistant.compaction")


class Status(StrEnum):
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"
    NOTHING = "nothing"  # the recent messages fit, are all pending, or are shorter than a summary


@dataclass(frozen=True)
class CompactionJob:
    """One compaction's input: ``overhead`` is the system prompt and tools' tokens, ``counts``
    each kept message's as shown."""

    reason: CompactionReason
    conv: Conversation
    policy: EffectivePolicy
    overhead: int
    counts: Sequence[int]
    system_prompt: str
    tools: Sequence[dict[str, Any]] | None = None
    focus: str | None = None
    cancel: CancelToken | None = None


@dataclass
class CompactionOutcome:
    status: Status
    record: CompactionRecord | None = None
    error: str = ""


@dataclass(frozen=True)
class Plan:
    cut: CutPlan
    history: Sequence[Message]
    prefix: Sequence[Message]
    tail: Sequence[Message]
    files: FileOps
    state: MechanicalState
    mechanical: str
    #: Index in ``conv.messages`` of the first message the plan's ``kept`` list starts at.
    base: int
    kept: Sequence[Message] = field(default_factory=tuple)
    #: The tail's (keep, floor, limit) the cut was chosen with (for the log).
    bounds: tuple[int, int, int] = (0, 0, 0)
    #: Tokens of the user's latest message (for the log).
    latest_tokens: int = 0

    def describe(self, budget: Budget) -> str:
        """The plan in one line for the log."""
        first = self.tail[0].id if self.tail else None
        keep, floor, limit = self.bounds
        return (f"first kept {first} (message {self.cut.cut + 1} of {len(self.kept)}), tail "
                f"{self.cut.kept_tokens} of {self.cut.total} tokens (keep {keep}, floor "
                f"{floor}, limit {limit}), model part {budget.model} tokens, latest user "
                f"message {self.latest_tokens} tokens")


@dataclass
class Compactor:
    """Runs one compaction over a conversation."""

    counter: TokenCounter
    summarizer: Callable[[], Summarizer]
    #: The prompt's tokens with a summary before the kept messages (the controller's).
    measure: Callable[[Conversation, str, str, Sequence[Message], Any], int]
    chat_prefix: Callable[[Conversation, str, Sequence[Message]], list[dict[str, Any]]]
    #: The window for the summarizer's own calls.
    window: Callable[[], int]
    cache: SummaryCache
    facts: FactsCache
    #: Whether a compaction in a turn leaves the model's summary to idle time (:meth:`summarize`).
    defer: Callable[[], bool]

    # -- 1: plan (with 2: budget); 3: summarize; 4: verify; all four: run ------------------
    def plan(self, job: CompactionJob, *, prefer_slack: int = 0) -> tuple[Plan | None, Budget]:
        """The cut and the record (:meth:`_plan`); when the summary grammar's room would
        summarize unanswered outputs, the model part keeps the policy's share instead (the
        question's files come first; the extractive fallback then writes the summary)."""
        plan, budget = self._plan(job, grammar_floor=True, prefer_slack=prefer_slack)
        if plan is None or plan.cut.cut <= pending_start(plan.kept):
            return plan, budget
        plain = compaction_budget(job.policy, job.overhead, self.counter.text, grammar_floor=False)
        if plain.model == budget.model:
            return plan, budget
        other, smaller = self._plan(job, grammar_floor=False, prefer_slack=prefer_slack)
        if other is not None and other.cut.cut < plan.cut.cut:
            log.info("The summary grammar's room would summarize unanswered outputs; the "
                     "model part keeps %d tokens", smaller.model)
            return other, smaller
        return plan, budget

    def _plan(
        self, job: CompactionJob, *, grammar_floor: bool, prefer_slack: int = 0
    ) -> tuple[Plan | None, Budget]:
        """The cut and the record; re-planned (a few times) with a smaller tail when summary
        and tail would not fit beside the reply with unanswered outputs at the floor."""
        conv, policy, overhead, counts = job.conv, job.policy, job.overhead, job.counts
        count = self.counter.text
        facts = self.facts.of(conv)
        kept = facts.kept
        base = len(conv.messages) - len(kept)
        budget = compaction_budget(policy, overhead, count, grammar_floor=grammar_floor)
        manual = job.reason == CompactionReason.MANUAL
        if manual:  # /compact asks for room now: the record keeps the policy's size
            fixed = max(policy.summary_budget - budget.model - budget.header, MIN_MODEL_BUDGET)
            budget = replace(budget, record=min(budget.record, fixed))
        waiting = facts.unanswered
        # The user's latest message is never summarized: the summary gives way to it (its
        # model part first), as long as it fits beside the smallest summary (the service
        # refuses a message larger than that before it is sent).
        prev = conv.last_compaction
        latest = facts.latest_user
        if latest is not None:
            need = _at_floor(kept, counts, latest, waiting)
            left = budget.room - need
            # With nothing before the message left to summarize, the current summary stays
            # as it is: it must fit beside the turn too.
            stays = count(prev.summary) + SUMMARY_SLACK if prev is not None and latest == 0 else 0
            smallest = budget.header + MIN_RECORD
            hard = policy.limit - overhead - SUMMARY_SLACK  # the window, reserve included
            if left >= max(smallest, stays):
                budget = beside_latest(budget, left)
            elif stays == 0 and hard - counts[latest] < smallest:
                # Not even the smallest summary fits beside the message in the whole window,
                # and it is never cut into a record: the call overflows and the user is told.
                log.info("The latest message (%d tokens) leaves no room for the smallest "
                         "summary in the window: nothing is summarized", counts[latest])
                return None, budget
            elif stays == 0 and budget.room - counts[latest] < smallest and hard - need >= smallest:
                # Splitting the turn would put the message itself into the record, cut: the
                # summary shrinks to the smallest instead, the reply gets what is left.
                budget = beside_latest(budget, smallest)
            else:
                # A turn whose answered tool steps cannot fit beside any summary is split:
                # the message goes into the record (whole when it fits the record's budget).
                latest = None
        pending = pending_start(kept)
        # Size the tail for the largest record (summarizing everything up to the pending
        # part, or everything), then render the record for the real cut.
        upto = base + pending
        if not any(m.role == "user" for m in conv.messages[:upto]):
            upto = len(conv.messages)
        widest = facts.record_state(upto, None, last_request_visible=False)
        record_max = count(render_mechanical(widest, budget.record, count))
        summary_est = budget.header + budget.model + record_max
        keep, floor, limit = tail_bounds(policy, budget, overhead, summary_est, manual=manual)
        trimmable = [
            max(c - TRIM_FLOOR, 0) if m.id in waiting else 0
            for m, c in zip(kept, counts, strict=True)
        ]
        # With nothing summarized, the current summary stays: the pending part must fit
        # beside it, or it may be split.
        current = count(prev.summary) + SUMMARY_SLACK if prev is not None else 0
        fits_now = policy.window - policy.reserve - overhead - current
        plan: Plan | None = None
        raised = False
        prefer = next(iter(self.cache.preferred_cuts(kept)), None)  # the newest written ahead
        for _ in range(4):
            # With nothing before the pending part and no summary yet, it only has to fit
            # beside what is there now; otherwise a new summary will stand beside it.
            room = fits_now if pending == 0 and prev is None else min(limit, fits_now)
            allowed = self._allowed(kept, counts, pending, room, waiting)
            if latest is not None:
                allowed[latest + 1 :] = [False] * (len(allowed) - latest - 1)
            cut = find_cut(
                kept, counts, keep=min(keep, limit), limit=limit, floor=min(floor, limit),
                allowed=allowed, prefer=prefer, prefer_limit=min(limit + prefer_slack, fits_now),
            )
            if not cut.summarizes_anything:
                return self._if_shrinks(plan, counts, prev, budget), budget
            tail = kept[cut.cut :]
            files = facts.files_before(cut.cut)
            state = facts.record_state(
                base + cut.cut, cut.cut, last_request_visible=any(m.role == "user" for m in tail)
            )
            mechanical = render_mechanical(state, budget.record, count)
            plan = Plan(
                cut=cut, history=kept[: cut.history_end], prefix=kept[cut.history_end : cut.cut],
                tail=tail, files=files, state=state, mechanical=mechanical, base=base, kept=kept,
                bounds=(min(keep, limit), min(floor, limit), limit),
                latest_tokens=counts[facts.latest_user] if facts.latest_user is not None else 0,
            )
            summary_max = budget.header + budget.model + count(mechanical)
            least = overhead + summary_max + cut.kept_tokens - sum(trimmable[cut.cut :])
            excess = least + policy.reserve - policy.window
            if excess > 0 and cut.cut < len(kept):
                limit = max(cut.kept_tokens - excess, 0)  # the tail must shrink
                floor = 0
                prefer_slack = 0
                continue
            # The real record is often smaller than the one the tail was sized for: keep
            # more of the tail while the window would otherwise stay more than half empty.
            deficit = int(policy.window * MIN_FILL) - (overhead + summary_max + cut.kept_tokens)
            if manual or deficit <= 0 or cut.kept_tokens + deficit > limit or raised:
                break
            floor = cut.kept_tokens + deficit
            keep = max(keep, floor)
            raised = True
        return self._if_shrinks(plan, counts, prev, budget), budget

    def _if_shrinks(
        self, plan: Plan | None, counts: Sequence[int], prev: CompactionRecord | None,
        budget: Budget,
    ) -> Plan | None:
        """``plan``, or None when its smallest summary (header and record) is no smaller
        than what it replaces: asking the model would only end in "did not shrink"."""
        if plan is None:
            return None
        count = self.counter.message
        replaced = sum(counts[: plan.cut.cut])
        if prev is not None:
            replaced += count(Message(role="user", content=prev.summary))
        least = count(Message(role="user", content=compose_summary(
            "", plan.mechanical, short=budget.short)))
        if least < replaced:
            return plan
        log.info("Nothing summarized: the smallest summary (%d tokens) would replace %d",
                 least, replaced)
        return None

    @staticmethod
    def _allowed(
        kept: Sequence[Message], counts: Sequence[int], pending: int, limit: int,
        waiting: frozenset[str],
    ) -> list[bool]:
        """Cut positions that summarize no unanswered output, with two exceptions. When the
        pending part does not fit whole, the turns before the latest one (asked already, with
        no final reply) may be summarized, so that the outputs of the question asked now are
        not cut for theirs; when the latest turn cannot fit even with its outputs cut to the
        floor, it may be split (the cut then keeps its newest outputs that fit)."""
        n = len(kept)
        allowed = [i <= pending for i in range(n + 1)]
        if sum(counts[pending:]) <= limit:
            return allowed
        latest = current_turn_start(kept)
        for i in range(pending + 1, latest + 1):
            allowed[i] = True
        if _at_floor(kept, counts, latest, waiting) > limit:
            # The oldest outputs of the turn go first: the cut keeps the newest that fit.
            for i in range(latest + 1, n + 1):
                allowed[i] = True
        return allowed

    def summarize(self, job: CompactionJob, plan: Plan, budget: Budget) -> SummaryOutcome | Status:
        """The summary proper (written ahead, by the code or by the summarizer) or CANCELLED."""
        request = self.request(job, plan, budget)
        reuse = self.cache.take(request, lambda text: self.counter.text(text) <= request.budget)
        if reuse is not None:
            ready = reuse.outcome
            ahead = "written ahead of time, while the chat was idle"
            if not reuse.whole:
                ahead += (f", for the first {reuse.covered} of the {reuse.span} messages "
                          "summarized (the others are in the record of what the user said)")
            log.info("Using the summary written ahead of time (%d of %d message(s) of "
                     "the span): %s", reuse.covered, reuse.span, plan.describe(budget))
            return replace(ready, rejected=list(ready.rejected),
                           note=f"{ready.note}; {ahead}" if ready.note else ahead)
        log.info("No summary written ahead for this plan: %s", plan.describe(budget))
        summarizer = self.summarizer()
        try:
            # The code writes it at once with ``defer`` on, inside a turn (not /compact), when
            # the model would be asked.
            if (job.reason != CompactionReason.MANUAL and self.defer()
                    and isinstance(summarizer, ModelSummarizer) and summarizer.asks_model(request)):
                log.info("Summary written by the code in the turn; the model's is left to "
                         "the time the user reads")
                return ExtractiveSummarizer(self.counter, DEFERRED_NOTE).summarize(
                    request, job.cancel)
            return summarizer.summarize(request, job.cancel)
        except SummaryCancelled:
            return Status.CANCELLED

    def request(self, job: CompactionJob, plan: Plan, budget: Budget) -> SummaryRequest:
        """What the summarizer is asked for this plan."""
        prev = job.conv.last_compaction
        return SummaryRequest(
            history=plan.history, turn_prefix=plan.prefix,
            previous=model_part(prev.summary) if prev else None, focus=job.focus,
            budget=budget.model, state=plan.state, window=self.window(),
            chat=self.chat_prefix(job.conv, job.system_prompt, plan.kept[: plan.cut.cut]),
            tools=job.tools,
        )

    def ahead(self, job: CompactionJob) -> Precomputed | None:
        """Plan the compaction the chat would get now and write its summary; None when
        nothing to summarize, already written, or cancelled."""
        started = time.perf_counter()
        plan, budget = self.plan(job)
        if plan is None or not plan.tail:
            return None
        request = self.request(job, plan, budget)
        key = summary_key(request)
        log.info("Plan written ahead for: %s", plan.describe(budget))
        if self.cache.get(key) is not None:
            return None
        try:
            outcome = self.summarizer().summarize(request, job.cancel)
        except SummaryCancelled:
            return None
        return Precomputed.of(request, plan.tail[0].id, outcome, time.perf_counter() - started)

    def verify(
        self, job: CompactionJob, plan: Plan, budget: Budget, text: str
    ) -> tuple[str, str, int]:
        """(model part, whole summary) fitted to the budget, and the prompt's tokens with it."""
        count = self.counter.text
        limit = budget.header + budget.model + count(plan.mechanical)
        text, summary = shrink_to_fit(
            truncate_to_tokens(text, budget.model, count),
            lambda part: compose_summary(part, plan.mechanical, short=budget.short), limit, count,
        )
        after = self.measure(job.conv, job.system_prompt, summary, plan.tail, job.tools)
        return text, summary, after

    def widen(
        self, job: CompactionJob, plan: Plan, budget: Budget, text: str, after: int
    ) -> tuple[Plan, str, int] | None:
        """Keep more of the tail when the summary left the window more than half empty (the
        tail was sized for the largest summary); the summary stays as written."""
        kept, policy = plan.kept, job.policy
        low = int(policy.window * MIN_FILL)
        high = policy.window - policy.reserve - int(policy.window * GROWTH_SHARE)
        valid = valid_cuts(kept)
        base_tail = plan.cut.kept_tokens
        choice: int | None = None
        tail = base_tail
        for i in range(plan.cut.cut - 1, 0, -1):
            tail += job.counts[i]
            if after + tail - base_tail > high:
                break
            if not valid[i] or (plan.cut.turn_start is not None and i <= plan.cut.turn_start):
                continue
            choice = i
            if after + tail - base_tail >= low:
                break
        if choice is None:
            return None
        new_tail = kept[choice:]
        state = self.facts.of(job.conv).record_state(
            plan.base + choice, plan.cut.cut,
            last_request_visible=any(m.role == "user" for m in new_tail),
        )
        mechanical = render_mechanical(state, budget.record, self.counter.text)
        wider = replace(plan, tail=new_tail, state=state, mechanical=mechanical)
        summary = compose_summary(text, mechanical, short=budget.short)
        measured = self.measure(job.conv, job.system_prompt, summary, new_tail, job.tools)
        if measured + policy.reserve > policy.window or measured <= after:
            return None
        return wider, summary, measured

    def run(
        self, job: CompactionJob, *, tokens_before: int, on_start: Callable[[int], None]
    ) -> CompactionOutcome:
        started = time.perf_counter()
        conv, policy = job.conv, job.policy
        if job.cancel is not None and job.cancel.cancelled:
            return CompactionOutcome(Status.CANCELLED)
        # At the threshold the cut a summary was written ahead for may keep a little more
        # than the tail's limit (the summary is then used as written: no wait).
        slack = (int(policy.window * PREFER_SLACK)
                 if job.reason == CompactionReason.THRESHOLD else 0)
        plan, budget = self.plan(job, prefer_slack=slack)
        if plan is None:
            return CompactionOutcome(Status.NOTHING, error=(
                "nothing to summarize: the recent messages fit, are not answered yet, or are "
                "shorter than any summary of them"))
        on_start(plan.cut.cut)
        log.info(
            "Compacting (%s): %d tokens, %d message(s) to summarize%s",
            job.reason, tokens_before, plan.cut.cut, " (split turn)" if plan.cut.split_turn else "",
        )
        try:
            got = self.summarize(job, plan, budget)
        except Exception as exc:
            log.exception("Summarizer failed during compaction (%s)", job.reason)
            return CompactionOutcome(Status.FAILED, error=f"summarizer error: {exc}")
        if isinstance(got, Status):
            return CompactionOutcome(got)
        text, summary, after = self.verify(job, plan, budget, got.text)
        if job.reason != CompactionReason.MANUAL and after < int(policy.window * MIN_FILL):
            wider = self.widen(job, plan, budget, text, after)
            if wider is not None:
                plan, summary, after = wider
        excess = after + policy.reserve - policy.window
        if excess > 0 and text:
            # The tail left no room for a summary this long (a message nearly the size of
            # the window): the summary proper gives way, the verbatim record stays.
            shorter = truncate_to_tokens(text, max(self.counter.text(text) - excess - 4, 0),
                                         self.counter.text)
            short_summary = compose_summary(shorter, plan.mechanical, short=budget.short)
            short_after = self.measure(conv, job.system_prompt, short_summary, plan.tail,
                                       job.tools)
            if short_after < after:
                left = self.counter.text(shorter)
                log.info("Summary proper cut to %d tokens so that the reply keeps its room",
                         left)
                text, summary, after = shorter, short_summary, short_after
                if not left:  # only the record, written by code, is left
                    got.kind = "extractive"
                    got.note = (
                        "is only the record of what the user said: the newest messages leave "
                        "no room for a summary beside them"
                    )
        if after >= tokens_before:
            error = f"the prompt did not shrink ({tokens_before} -> {after} tokens)"
            return CompactionOutcome(Status.FAILED, error=error)
        prev = conv.last_compaction
        record = CompactionRecord(
            summary=summary,
            first_kept_id=plan.tail[0].id if plan.tail else None,
            last_summarized_id=plan.kept[plan.cut.cut - 1].id,
            tokens_before=tokens_before,
            tokens_after=after,
            reason=job.reason,
            count=len(conv.compactions) + 1,
            previous_summary=prev.summary if prev else None,
            files_read=list(plan.files.read),
            files_modified=list(plan.files.modified),
            duration_s=round(time.perf_counter() - started, 4),
            summarizer=got.kind,
            focus=job.focus,
            rejected=list(got.rejected),
            summarizer_note=got.note,
        )
        return CompactionOutcome(Status.DONE, record=record)


def _at_floor(
    kept: Sequence[Message], counts: Sequence[int], start: int, waiting: frozenset[str]
) -> int:
    """Tokens of ``kept[start:]`` with the unanswered outputs cut to the floor."""
    return sum(min(c, TRIM_FLOOR) if m.id in waiting else c
               for m, c in zip(kept[start:], counts[start:], strict=True))

