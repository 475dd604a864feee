"""What writes and checks a compaction's summary, behind one entry point.

The compactor (and the branch summarizer) call :meth:`Summarizer.summarize` with a
:class:`SummaryRequest` and get a :class:`SummaryOutcome`: the model's summary proper when it
passed the checks (:mod:`.validate`, a table of named checks), else the deterministic
extractive fallback, with ``kind`` saying which and ``note`` why. Code outside this package
imports only the names below (a contract holds it); its modules and their layers are drawn
in docs/ARCHITECTURE.md ("Inside compaction/").
"""

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
    deferred_summary,
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
    "deferred_summary",
    "min_budget",
    "model_part",
    "render_mechanical",
]
