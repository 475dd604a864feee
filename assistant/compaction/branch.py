"""Summaries of an abandoned branch, written by the same parts as a compaction summary.
More in docs/COMPACTION.md."""

from __future__ import annotations

from collections.abc import Sequence

from assistant.compaction.file_tracking import extract_file_ops
from assistant.compaction.summary import (
    MECHANICAL_MARKER,
    ExtractiveSummarizer,
    Summarizer,
    SummaryRequest,
    collect_state,
    render_mechanical,
)
from assistant.compaction.tokens import (
    CountingBackend,
    TokenCounter,
    shrink_to_fit,
    truncate_to_tokens,
)
from assistant.conversation import Message

BRANCH_HEADER = "The user explored another branch of this chat and left it."
#: Share of the budget the verbatim record may take (the user's words come first).
RECORD_SHARE = 0.6
#: Below this many tokens a record says nothing useful; below three times it, the record
#: gets all the room (a summary proper would crowd out the user's own words).
MIN_RECORD = 32
#: The model's window assumed for a summarizer that calls a model (ignored otherwise).
DEFAULT_WINDOW = 8_192


class BranchSummarizer:
    """``summarizer(messages, budget_tokens) -> text``, as ``SessionStore`` expects."""

    def __init__(
        self, counter: TokenCounter | None = None, summarizer: Summarizer | None = None, *,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self._counter = counter
        self._summarizer = summarizer
        self.window = window

    @property
    def counter(self) -> TokenCounter:
        """The token counter (the offline one is loaded on first use, not before)."""
        if self._counter is None:
            self._counter = TokenCounter(CountingBackend())
        return self._counter

    @property
    def summarizer(self) -> Summarizer:
        if self._summarizer is None:
            self._summarizer = ExtractiveSummarizer(self.counter)
        return self._summarizer

    def __call__(self, messages: Sequence[Message], budget: int) -> str:
        """The branch's summary within ``budget`` tokens (of :attr:`counter`)."""
        count = self.counter.text
        header = truncate_to_tokens(BRANCH_HEADER, budget, count)
        room = budget - count(header + MECHANICAL_MARKER) - 2
        if room < MIN_RECORD:
            return header
        state = collect_state(messages, extract_file_ops(messages), last_request_visible=False)
        share = room if room < 3 * MIN_RECORD else int(room * RECORD_SHARE)
        record = render_mechanical(state, share, count)
        proper_budget = max(room - count(record), 0)
        proper = ""
        if proper_budget > 0:
            request = SummaryRequest(
                history=list(messages), turn_prefix=(), previous=None, focus=None,
                budget=proper_budget, state=state, window=self.window,
            )
            proper = self.summarizer.summarize(request, None).text.strip()
        # Template joins cost a token here and there.
        proper, text = shrink_to_fit(proper, lambda p: _compose(header, p, record), budget, count)
        if count(text) > budget:
            text = truncate_to_tokens(text, budget, count)
        return text


def _compose(header: str, proper: str, record: str) -> str:
    text = header + (f"\n\n{proper}" if proper else "")
    return text + (MECHANICAL_MARKER + record if record else "")
