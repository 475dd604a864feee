"""What writes and checks a compaction's summary, behind one entry point:
:meth:`Summarizer.summarize` (docs/ARCHITECTURE.md, "Inside compaction/")."""

from assistant.compaction.summary.extractive import (
    MechanicalState,
    collect_state,
    compose_summary,
    model_part,
    render_mechanical,
)
from assistant.compaction.summary.grammar import min_budget
from assistant.compaction.summary.prompts import (
    MECHANICAL_MARKER,
    SUMMARY_HEADER,
    SUMMARY_HEADER_SHORT,
)
from assistant.compaction.summary.summarizer import (
    DEFERRED_NOTE,
    TOO_SMALL_FOR_GRAMMAR,
    ExtractiveSummarizer,
    ModelSummarizer,
    Summarizer,
    SummaryCancelled,
    SummaryKind,
    SummaryOutcome,
    SummaryRequest,
)

__all__ = [
    "DEFERRED_NOTE",
    "MECHANICAL_MARKER",
    "SUMMARY_HEADER",
    "SUMMARY_HEADER_SHORT",
    "TOO_SMALL_FOR_GRAMMAR",
    "ExtractiveSummarizer",
    "MechanicalState",
    "ModelSummarizer",
    "Summarizer",
    "SummaryCancelled",
    "SummaryKind",
    "SummaryOutcome",
    "SummaryRequest",
    "collect_state",
    "compose_summary",
    "min_budget",
    "model_part",
    "render_mechanical",
]
