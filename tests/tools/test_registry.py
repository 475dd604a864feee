"""The registry: OpenAI schemas, unknown tools, bad arguments, crashing tools."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from assistant.conversation import ToolCall
from assistant.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from assistant.tools.registry import ToolRegistry

EXPECTED = {"read_file", "list_dir", "find_files", "grep", "write_file", "edit_file", "run_command"}


def test_schemas_are_openai_function_form(registry: ToolRegistry) -> None:
    schemas = registry.schemas()
    assert {s["function"]["name"] for s in schemas} == EXPECTED
    for schema in schemas:
        assert schema["type"] == "function"
        fn = schema["function"]
        assert fn["description"]
        params = fn["parameters"]
        assert params["type"] == "object"
        for spec in params["properties"].values():
            assert "title" not in spec
            assert "anyOf" not in spec
            assert "type" in spec
    read = next(s for s in schemas if s["function"]["name"] == "read_file")
    assert read["function"]["parameters"]["required"] == ["path"]
    assert read["function"]["parameters"]["properties"]["start_line"]["type"] == "integer"


def test_which_tools_need_approval(registry: ToolRegistry) -> None:
    needs = {n for n in registry.names() if (t := registry.get(n)) and t.needs_approval}
    assert needs == {"write_file", "edit_file", "run_command"}


def test_unknown_tool(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = registry.run(ToolCall(name="delete_everything", arguments={}), ctx)
    assert result.is_error
    assert "There is no tool named 'delete_everything'" in result.text
    assert ("- edit_file: Replace text in a workspace file" in result.text
            and "- read_file: Read " in result.text)


def test_raw_arguments_are_an_error(registry: ToolRegistry, ctx: ToolContext) -> None:
    call = ToolCall(name="read_file", raw_arguments="path=a.txt")
    result = registry.run(call, ctx)
    assert result.is_error and "not a JSON object" in result.text
    assert "read_file(path: string" in result.text


def test_wrong_types(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = registry.run(ToolCall(name="read_file", arguments={"path": ["a"]}), ctx)
    assert result.is_error and "Invalid arguments for read_file" in result.text


def test_numbers_as_strings_are_accepted(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "a.txt").write_text("1\n2\n3\n", encoding="utf-8")
    call = ToolCall(name="read_file", arguments={"path": "a.txt", "start_line": "2"})
    assert registry.run(call, ctx).text.startswith("a.txt (lines 2-3 of 3)")


def test_normalize_renames_aliases_and_keeps_id(registry: ToolRegistry) -> None:
    call = ToolCall(name="read_file", arguments={"file_path": "a.txt"})
    normal = registry.normalize(call)
    assert normal.arguments == {"path": "a.txt"}
    assert normal.id == call.id
    same = ToolCall(name="read_file", arguments={"path": "a.txt"})
    assert registry.normalize(same) is same


class _Args(ToolArgs):
    aliases: ClassVar[dict[str, str]] = {}


class _Crashing(Tool[_Args]):
    name = "crash"
    description = "always fails"
    args_model = _Args

    def run(self, args: _Args, ctx: ToolContext) -> ToolResult:
        raise RuntimeError("boom")


def test_a_crashing_tool_becomes_an_error_result(ctx: ToolContext) -> None:
    registry = ToolRegistry([_Crashing()])
    result = registry.run(ToolCall(name="crash"), ctx)
    assert result.is_error and "RuntimeError: boom" in result.text


def test_duplicate_names_rejected() -> None:
    import pytest

    with pytest.raises(ValueError):
        ToolRegistry([_Crashing(), _Crashing()])
