"""What the terminal prints for the service's events that have no window to show them."""

from __future__ import annotations

import io

from assistant.agent.events import ContextChanged
from assistant.cli.chat import TerminalPrinter
from assistant.compaction.events import (
    CompactionCancelled,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    PruneEvent,
    TrimEvent,
    trim_text,
)
from assistant.conversation import CompactionReason, CompactionRecord
from assistant.service.events import ModelSwitchSuggested


def test_a_chat_last_used_with_another_model_says_so_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    TerminalPrinter(out, err)(ModelSwitchSuggested("abc", "gemma-3-270m", "smollm2-135m-instruct"))
    assert err.getvalue() == (
        "[info] This chat was last used with gemma-3-270m; answering with "
        "smollm2-135m-instruct (start with --model gemma-3-270m to use it).\n"
    )
    assert out.getvalue() == ""


def test_context_events_print_the_windows_words_on_stderr_only() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = TerminalPrinter(out, err)
    record = CompactionRecord(
        summary="s", first_kept_id="m9", tokens_before=8_912, tokens_after=3_104,
        reason=CompactionReason.MANUAL, count=1,
    )
    for event in (
        PruneEvent(("a",), 1_240),
        PruneEvent(("a", "b"), 2_000),
        TrimEvent(("c",), 900, 400),
        CompactionStarted(CompactionReason.THRESHOLD, 5_000),
        CompactionFinished(record),
        CompactionFailed(CompactionReason.OVERFLOW, "the model stopped"),
        CompactionCancelled(CompactionReason.MANUAL),
    ):
        printer(ContextChanged(event))
    lines = err.getvalue().splitlines()
    assert lines[:4] == [
        "[context] Cleared 1 old tool output, 1,240 tokens",
        "[context] Cleared 2 old tool outputs, 2,000 tokens",
        f"[context] {trim_text(TrimEvent(('c',), 900, 400))}",
        "[context] Compacting (threshold)... (Ctrl-C to cancel)",
    ]
    assert lines[4:] == [
        "[context] Compacted from 8,912 to 3,104 tokens",
        "[context] Compaction failed: the model stopped",
        "[context] Compaction cancelled.",
    ]
    assert out.getvalue() == ""
