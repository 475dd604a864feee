"""Serialization, validation, file tracking and the mechanical / extractive summaries."""

from __future__ import annotations

from assistant.compaction.file_tracking import FileOps, extract_file_ops
from assistant.compaction.summary.extractive import (
    collect_state,
    compose_summary,
    extractive_summary,
    model_part,
    render_mechanical,
)
from assistant.compaction.summary.prompts import REQUIRED_SECTIONS, build_prompt
from assistant.compaction.summary.serialize import serialize
from assistant.compaction.summary.user_text import instructions
from assistant.compaction.summary.validate import missing_sections, validate_summary
from assistant.compaction.tokens import CountingBackend
from assistant.conversation import Message, ToolCall

from ..helpers import GOOD_SUMMARY

COUNT = CountingBackend().count


def _call(name: str, path: str, call_id: str, **extra: str) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments={"path": path, **extra})


def test_serialize_labels_and_truncates_tool_results() -> None:
    msgs = [
        Message(role="user", content="Fix it"),
        Message(role="assistant", content="Looking", tool_calls=[_call("read_file", "a.py", "1")]),
        Message(role="tool", tool_call_id="1", name="read_file", content="x" * 2_000, pruned=True),
        Message(role="assistant", content="half", stopped=True),
    ]
    text = serialize(msgs)
    assert "[User]: Fix it" in text
    assert "[Assistant]: Looking" in text
    assert '[Tool call]: read_file(path="a.py")' in text
    assert "[Tool result] read_file: xxx" in text and "1840 more characters truncated" in text
    assert "[Assistant (stopped by the user)]: half" in text


def test_prompt_kinds() -> None:
    initial = build_prompt("T", previous=None, kind="initial", focus=None, words=100)
    update = build_prompt("T", previous="OLD", kind="update", focus="db", words=100)
    assert "<previous-summary>" not in initial and "<previous-summary>\nOLD" in update
    assert "Pay special attention to: db" in update
    for section in REQUIRED_SECTIONS:
        assert f"## {section}" in initial


def test_validate_accepts_a_good_summary() -> None:
    source = '[User]: Question 0 about src/file_0.py.\n[Tool call]: read_file(path="src/file_0.py")'
    source += "\n[Tool result] read_file: line 0 of the file with some words in it"
    assert validate_summary(GOOD_SUMMARY, source=source, budget=500, count=COUNT) == []
    # The same summary of a conversation that never named those files says nothing of it.
    problems = validate_summary(GOOD_SUMMARY, source="[User]: hi", budget=500, count=COUNT)
    assert "the Goal names nothing from the conversation" in problems
    assert any(p.startswith("names things not in the conversation: src/file_0.py")
               for p in problems)


def test_file_tracking_read_modified_errors_and_cumulative() -> None:
    msgs = [
        Message(role="assistant", tool_calls=[
            _call("read_file", "a.py", "1"), _call("read_file", "b.py", "2"),
            _call("edit_file", "b.py", "3"), _call("write_file", "c.py", "4"),
            _call("grep", "src", "5", pattern="x"), _call("list_dir", "src", "6"),
        ]),
        Message(role="tool", tool_call_id="4", content="denied", is_error=True),
        Message(role="assistant", initiated_by="user",
                tool_calls=[_call("read_file", "d.md", "7")]),
    ]
    ops = extract_file_ops(msgs)
    assert ops.read == ["a.py", "d.md"]
    assert ops.modified == ["b.py"]
    later = extract_file_ops(
        [Message(role="assistant", tool_calls=[_call("edit_file", "a.py", "8")])], ops
    )
    assert later.modified == ["b.py", "a.py"] and later.read == ["d.md"]


def test_constraint_sentences() -> None:
    text = "Hello there. You must keep tests green! I like tea.\nNever edit vendor/ files."
    assert instructions(text) == ["You must keep tests green!", "Never edit vendor/ files."]


def test_mechanical_state_keeps_constraints_files_and_requests_within_budget() -> None:
    msgs = [Message(role="user", content=f"Message {i}: " + "filler " * 40) for i in range(20)]
    msgs.insert(0, Message(role="user", content="Always use tabs. Make the CLI fast."))
    msgs.append(Message(role="user", content="Finally, do not delete logs."))
    files = FileOps(read=[f"src/f{i}.py" for i in range(8)], modified=["setup.py"])
    state = collect_state(msgs, files, last_request_visible=False)
    text = render_mechanical(state, 300, COUNT)
    assert COUNT(text) <= 300
    assert "Always use tabs." in text and "do not delete logs." in text
    assert "setup.py" in text and "src/f0.py" in text and "src/f7.py" in text
    assert "## Last user request (verbatim)\nFinally, do not delete logs." in text
    assert "- [messages 2-" in text and " omitted]" in text  # plain older ones did not fit
    assert "Message 19" in text  # newest first


def test_last_request_omitted_when_visible() -> None:
    msgs = [Message(role="user", content="Do X")]
    state = collect_state(msgs, FileOps(), last_request_visible=True)
    assert state.last_request is None


def test_extractive_summary_has_every_section_and_fits() -> None:
    msgs = [
        Message(role="user", content="Build a parser. Never use regex."),
        Message(role="assistant", tool_calls=[_call("read_file", "p.py", "1")]),
        Message(role="tool", tool_call_id="1", content="boom", is_error=True),
        Message(role="assistant", content="The file is missing."),
    ]
    state = collect_state(msgs, extract_file_ops(msgs), last_request_visible=False)
    text = extractive_summary(msgs, state, previous="## Goal\nOld goal", budget=200, count=COUNT)
    for section in REQUIRED_SECTIONS:
        assert f"## {section}" in text
    assert "Build a parser." in text and "boom" in text and "Old goal" in text
    assert COUNT(text) <= 200
    assert missing_sections(text) == []


def test_model_part_round_trip() -> None:
    full = compose_summary(GOOD_SUMMARY, "## Files\nRead: a.py")
    assert model_part(full) == GOOD_SUMMARY.strip()


def test_a_tight_file_list_keeps_the_oldest_path() -> None:
    from assistant.compaction.summary.extractive import _path_list

    count = CountingBackend().count
    paths = [f"src/pkg/module_{i}.py" for i in range(6)]
    full = _path_list("Read", paths, 1_000, count)
    assert full == "Read: " + ", ".join(paths)
    tight = _path_list("Read", paths, count("Read: src/pkg/module_0.py [+5 more]"), count)
    assert tight == "Read: src/pkg/module_0.py [+5 more]"
    assert _path_list("Read", paths, 3, count) == "Read: [6 files]"


def test_short_header_round_trips() -> None:
    from assistant.compaction.summary.extractive import compose_summary, model_part
    from assistant.compaction.summary.prompts import SUMMARY_HEADER_SHORT

    text = compose_summary("## Goal\nx", "## Files\nRead: a.py", short=True)
    assert text.startswith(SUMMARY_HEADER_SHORT)
    assert model_part(text) == "## Goal\nx"
