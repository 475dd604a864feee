"""The tool registry: OpenAI-form schemas for the model, argument checking, and execution
that turns anything the model did wrong into an error result saying what to do."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from assistant.conversation import ToolCall
from assistant.textsafe import clean_text
from assistant.tools.base import Tool, ToolArgs, ToolContext, ToolResult, canonical_arguments
from assistant.tools.workspace import SandboxError

CALL_FORMAT_HINT = (
    "To call a tool, reply with only a fenced block like this:\n"
    '```tool_call\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```'
)


@dataclass(frozen=True)
class CheckedCall:
    """A call whose tool exists and whose arguments validated."""

    call: ToolCall
    tool: Tool[Any]
    args: ToolArgs


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool[Any]]) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._schemas: list[dict[str, Any]] | None = None
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"tool {tool.name!r} registered twice")
            self._tools[tool.name] = tool

    @classmethod
    def default(cls) -> ToolRegistry:
        from assistant.tools.edit_file import EditFileTool
        from assistant.tools.find_files import FindFilesTool
        from assistant.tools.grep import GrepTool
        from assistant.tools.list_dir import ListDirTool
        from assistant.tools.read_file import ReadFileTool
        from assistant.tools.run_command import RunCommandTool
        from assistant.tools.write_file import WriteFileTool

        return cls([ReadFileTool(), ListDirTool(), FindFilesTool(), GrepTool(), WriteFileTool(),
                    EditFileTool(), RunCommandTool()])

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        """The tools' JSON schemas, a copy each, made once (pydantic takes ~40 ms; every call
        asks)."""
        if self._schemas is None:
            self._schemas = [tool_schema(t) for t in self._tools.values()]
        return copy.deepcopy(self._schemas)

    def normalize(self, call: ToolCall) -> ToolCall:
        """``call`` with argument aliases renamed (``file_path`` -> ``path``), same id."""
        tool = self._tools.get(call.name)
        if tool is None or call.raw_arguments is not None:
            return call
        args = canonical_arguments(tool.args_model, call.arguments)
        return call if args == call.arguments else call.model_copy(update={"arguments": args})

    def check(self, call: ToolCall) -> CheckedCall | ToolResult:
        """The validated call, or an error result telling the model the expected form."""
        checked = self._check(call)
        return _valid(checked) if isinstance(checked, ToolResult) else checked

    def _check(self, call: ToolCall) -> CheckedCall | ToolResult:
        tool = self._tools.get(call.name)
        if tool is None:
            # The call's form was understood; its name is wrong: what each tool does helps
            # pick the right one (Qwen2.5-Coder 0.5B called "change_port" to change a port).
            tools = "\n".join(f"- {t.name}: {t.description}" for t in self._tools.values())
            return ToolResult.error(
                f"There is no tool named {call.name!r}. Call one of these instead:\n{tools}"
            )
        if call.raw_arguments is not None:
            return ToolResult.error(
                f"The arguments of {call.name} are not a JSON object: "
                f"{_shorten(call.raw_arguments)}\nExpected {signature(tool)}.\n" + CALL_FORMAT_HINT
            )
        try:
            args = tool.args_model.model_validate(call.arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            return ToolResult.error(
                f"Invalid arguments for {call.name} ({problems}). Expected {signature(tool)}."
            )
        return CheckedCall(call=call, tool=tool, args=args)

    def execute(self, checked: CheckedCall, ctx: ToolContext) -> ToolResult:
        """Run the checked call; its output is valid text whatever the tool read (issue 47)."""
        return _valid(self._execute(checked, ctx))

    def _execute(self, checked: CheckedCall, ctx: ToolContext) -> ToolResult:
        try:
            return checked.tool.run(checked.args, ctx)
        except SandboxError as exc:
            return ToolResult.error(str(exc))
        except OSError as exc:
            return ToolResult.error(f"{checked.tool.name} failed: {exc.strerror or exc}.")
        except Exception as exc:  # a bug in a tool must not end the chat
            return ToolResult.error(f"{checked.tool.name} failed: {type(exc).__name__}: {exc}")

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        """Check and execute without asking anyone (for tests and user-started tools)."""
        checked = self.check(call)
        return checked if isinstance(checked, ToolResult) else self.execute(checked, ctx)


def _valid(result: ToolResult) -> ToolResult:
    """``result`` with lone surrogates replaced (:func:`clean_text`): nothing a tool read or
    was given that is not valid text reaches the chat."""
    text = clean_text(result.text)
    return result if text == result.text else ToolResult(text, result.is_error)


def tool_schema(tool: Tool[Any]) -> dict[str, Any]:
    params = _clean_schema(tool.args_model.model_json_schema())
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": params},
    }


def signature(tool: Tool[Any]) -> str:
    """``read_file(path: string, start_line?: integer, ...)`` for error messages."""
    params = tool_schema(tool)["function"]["parameters"]
    required = set(params.get("required", []))
    args = ", ".join(
        f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
        for name, spec in params.get("properties", {}).items()
    )
    return f"{tool.name}({args})"


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop titles and collapse ``X | None`` so small models see a plain schema."""
    props: dict[str, Any] = {}
    for name, spec in schema.get("properties", {}).items():
        spec = {k: v for k, v in spec.items() if k != "title"}
        any_of = spec.pop("anyOf", None)
        if any_of:
            kinds = [s for s in any_of if s.get("type") != "null"]
            if len(kinds) == 1:
                spec = {**kinds[0], **spec}
            else:
                spec["anyOf"] = any_of
        if spec.get("default", 0) is None:
            del spec["default"]
        props[name] = spec
    out: dict[str, Any] = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    return out


def _shorten(text: str, limit: int = 200) -> str:
    text = json.dumps(text, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."
