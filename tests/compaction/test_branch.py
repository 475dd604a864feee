"""Branch summaries are written by compaction's parts: summarizer, file tracking, record."""

from __future__ import annotations

from assistant.compaction.branch import BRANCH_HEADER, BranchSummarizer
from assistant.compaction.summary.prompts import MECHANICAL_MARKER
from assistant.compaction.summary.summarizer import ModelSummarizer
from assistant.compaction.tokens import TokenCounter
from assistant.conversation import Message, ToolCall
from tests.fakes.scripted import ScriptedBackend

SUMMARY = (
    "## Goal\n- Rename the config loader in src/loader.py\n\n## Constraints & Preferences\n"
    "- none\n\n## Progress\n### Done\n- Read src/loader.py\n### In Progress\n- Renaming load to "
    "load_config\n### Blocked\n- none\n\n## Key Decisions\n- Keep load as an alias of "
    "load_config\n\n## Next Steps\n- Update the callers of load in src/loader.py\n\n"
    "## Critical Context\n- src/loader.py holds load"
)


def _branch() -> list[Message]:
    read = ToolCall(name="read_file", arguments={"path": "src/loader.py"})
    other = ToolCall(name="Read", arguments={"file_path": "docs/config.md"})  # another agent's
    return [
        Message(role="user", content="Rename the config loader. Never touch the tests."),
        Message(role="assistant", tool_calls=[read, other]),
        Message(role="tool", tool_call_id=read.id, name="read_file", content="def load(): ..."),
        Message(role="tool", tool_call_id=other.id, name="Read", content="# Config"),
        Message(role="assistant", content="I would rename load to load_config."),
    ]


def test_the_record_uses_compaction_file_tracking_and_the_users_words() -> None:
    text = BranchSummarizer()(_branch(), 512)
    head, _, record = text.partition(MECHANICAL_MARKER)
    assert head.startswith(BRANCH_HEADER) and "## Goal" in head
    assert "Rename the config loader. Never touch the tests." in record
    assert "Read: src/loader.py, docs/config.md" in record


def test_a_model_summarizer_writes_the_summary_proper_within_the_budget() -> None:
    backend = ScriptedBackend([SUMMARY])
    counter = TokenCounter(backend)
    summarize = BranchSummarizer(counter, ModelSummarizer(backend, counter), window=8_192)
    text = summarize(_branch(), 400)
    assert backend.calls, "the model was asked"
    assert "Keep load as an alias of load_config" in text
    assert counter.text(text) <= 400
    assert "Never touch the tests." in text.partition(MECHANICAL_MARKER)[2]
