"""The tool-use probe: each task scored on the answer and the files on disk, the score kept,
and a model measured failing it offered no tools (told once, in plain words)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assistant.agent.events import Notice
from assistant.config import Settings
from assistant.conversation import Conversation
from assistant.engine import TOOL_NOTE, build_engine
from assistant.llm.tool_score import ToolScore, ToolScoreStore, offers_tools, score_of
from assistant.tool_probe import TASKS, probe_tool_use
from tests.fakes.scripted import ScriptedBackend


def _call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


#: What a model that can use the tools does for each task, in order.
GOOD = [
    _call("read_file", path="notes.txt"), "The meeting is on Thursday at 14:30 in room B12.",
    _call("find_files", pattern="**/budget_2024.csv"), "It is in reports/q3.",
    _call("grep", pattern="def parse_invoice", path="src"), "src/billing.py defines it.",
    _call("write_file", path="hello.txt", content="hello world"), "Created hello.txt.",
    _call("read_file", path="app/config.py"),
    _call("edit_file", path="app/config.py", old_text="PORT = 8080", new_text="PORT = 9090"),
    "Changed the port to 9090.",
    _call("read_file", path="todo.txt"),
    _call("write_file", path="first.txt", content="buy oat milk\n"), "Done.",
]


def test_a_model_that_does_the_tasks_scores_them_all(tmp_path: Path) -> None:
    backend = ScriptedBackend(list(GOOD))
    score = probe_tool_use(backend, Settings(workspace=str(tmp_path)))
    assert (score.passed, score.total) == (6, 6), [t for t in score.tasks if not t["passed"]]
    assert score.offers_tools
    assert score.tasks[4]["calls"] == ["read_file", "edit_file"]


def test_invented_answers_and_wrong_files_fail(tmp_path: Path) -> None:
    """Prose that invents code, an answer that misses the time, a file with other text."""
    replies = [
        "```python\nopen('notes.txt').read()\n```", "It is in reports/2023.",
        "I think main.py.", _call("write_file", path="hello.txt", content="Hello, World!"),
        "Done.", _call("write_file", path="app/config.py", content="PORT = 9090\n"),
        "Done.", "first line: buy oat milk",
    ]
    score = probe_tool_use(ScriptedBackend(replies), Settings(workspace=str(tmp_path)))
    assert score.passed == 0 and not score.offers_tools
    whys = [t["why"] for t in score.tasks]
    assert "does not say thursday, 14:30" in whys[0]
    assert "hello.txt holds 'Hello, World!'" in whys[3]
    assert "app/config.py is 'PORT = 9090\\n'" in whys[4]
    assert "first.txt was not written" in whys[5]


def test_the_score_decides_whether_tools_are_offered(tmp_path: Path) -> None:
    store = ToolScoreStore(tmp_path / "tool_use.json")
    backend = ScriptedBackend(["Hello."])
    info = backend.info
    assert score_of(info, store) is None and offers_tools(info, store)  # not measured: offered
    failing = ToolScore(model=_model_of(info), passed=1, total=6, measured="2026-12-07")
    store.put(failing)
    assert not offers_tools(info, store)
    assert score_of(info, store) == failing


def _model_of(info: Any) -> str:
    from assistant.llm.context_probe import model_id

    return str(model_id(info))


def test_a_model_offered_no_tools_is_told_once_and_sees_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = ScriptedBackend(["Paris.", "Berlin."])
    events: list[Any] = []
    settings = Settings(workspace=str(tmp_path))
    engine = build_engine(backend, lambda: settings, None, events.append, tools=False)
    conv = Conversation()
    engine.agent.chat(conv, "Capital of France?")
    engine.agent.chat(conv, "And of Germany?")
    notes = [e.text for e in events if isinstance(e, Notice) and e.level == "info"]
    assert len([n for n in notes if "cannot use the file tools" in n]) == 1
    assert "/read FILE" in notes[0]
    assert all(not call.tools for call in backend.calls)
    assert "read_file" not in backend.calls[0].prompt_text
    assert [m.content for m in conv.messages if m.role == "assistant"] == ["Paris.", "Berlin."]


def test_a_model_offered_the_tools_is_told_what_they_are_for(tmp_path: Path) -> None:
    """The tools are for the workspace's files: said after the system prompt (the chat's own
    too) when they are offered to a model with native tool calls (where it was measured),
    and not when they are not offered, nor to a model on the text protocol."""
    settings = Settings(workspace=str(tmp_path), system_prompt="You are terse.")
    native = (Path(__file__).parent / "data" / "chatml_tools.jinja").read_text()
    offered = ScriptedBackend(["Paris."], template_source=native)
    assert offered.info.supports_native_tools
    build_engine(offered, lambda: settings, None, lambda e: None, tools=True).agent.chat(
        Conversation(), "What is the capital of France?")
    system = offered.calls[0].messages[0]
    assert system["role"] == "system"
    assert system["content"] == f"You are terse.\n\n{TOOL_NOTE}"
    assert settings.system_prompt == "You are terse."  # the setting itself is unchanged
    none = ScriptedBackend(["Paris."])
    build_engine(none, lambda: settings, None, lambda e: None, tools=False).agent.chat(
        Conversation(), "What is the capital of France?")
    assert none.calls[0].messages[0]["content"] == "You are terse."
    assert TOOL_NOTE not in none.calls[0].prompt_text
    text_protocol = ScriptedBackend(["Paris."])
    build_engine(text_protocol, lambda: settings, None, lambda e: None, tools=True).agent.chat(
        Conversation(), "What is the capital of France?")
    assert text_protocol.calls[0].messages[0]["content"] == "You are terse."


def test_every_task_has_files_a_prompt_and_a_check() -> None:
    assert len(TASKS) == 6 and len({t.name for t in TASKS}) == 6
    for task in TASKS:
        assert task.prompt and task.files and task.check(Path("/nonexistent"), "") is not None


def test_a_model_with_native_tool_calls_sees_its_earlier_calls_as_calls(tmp_path: Path) -> None:
    """Earlier turns' calls as notes ("[I ran ...]") are for text-protocol models: Qwen2.5-
    Coder 1.5B copied such a note instead of calling write_file (no file was written)."""
    native_source = (Path(__file__).parent / "data" / "chatml_tools.jinja").read_text()
    settings = Settings(workspace=str(tmp_path))
    assert settings.switches().earlier_as_notes
    native = ScriptedBackend(template_source=native_source)
    assert native.info.supports_native_tools
    engine = build_engine(native, lambda: settings, None, lambda e: None, tools=True)
    assert not engine.controller.switches().earlier_as_notes
    plain = build_engine(ScriptedBackend(), lambda: settings, None, lambda e: None, tools=True)
    assert plain.controller.switches().earlier_as_notes
    quiet = build_engine(native, lambda: settings, None, lambda e: None, tools=False)
    assert quiet.controller.switches().earlier_as_notes  # offered no tools: notes as before
