"""Chat templates: the GGUF's ``tokenizer.chat_template`` (Jinja2), else ChatML (SmolLM2's).

Tool calls go to a template that renders ``tools`` and ``tool_calls`` natively; any other gets
the text protocol (:meth:`ChatTemplate.adapt`): the tools in the system message, calls as the
fenced block the model is asked to write, results as ``[Tool result: NAME]`` user messages.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import jinja2
import jinja2.sandbox

from assistant import jsonlimits
from assistant.conversation import valid_text
from assistant.llm.transcript_recall import without_labels

#: How the text protocol starts a tool result sent as a user message.
TOOL_RESULT = "[Tool result:"

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

TOOL_PROTOCOL = """\
# Tools
You can use these tools. To call one, reply with only a fenced block like this and stop:
```tool_call
{{"name": "TOOL_NAME", "arguments": {{"ARG": "VALUE"}}}}
```
The result comes back in a message starting with [Tool result: TOOL_NAME].
Available tools:
{tools}"""


def describe_tools(tools: Sequence[dict[str, Any]]) -> str:
    lines = []
    for tool in tools:
        fn = tool.get("function", tool)
        params = fn.get("parameters", {}).get("properties", {})
        required = set(fn.get("parameters", {}).get("required", []))
        args = ", ".join(
            f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
            for name, spec in params.items()
        )
        lines.append(f"- {fn['name']}({args}): {fn.get('description', '')}".rstrip())
    return "\n".join(lines)


def format_call_block(name: str, arguments: str) -> str:
    """An assistant tool call in the text protocol: ``arguments`` as the object it holds
    when the parser would take it, else as a JSON string (a hostile call renders too)."""
    if isinstance(name, str) and isinstance(arguments, str):
        return _format_call_block(name, arguments)  # memoized: every render rewrites them all
    return _format_call_block.__wrapped__(name, arguments)


@functools.lru_cache(maxsize=4096)
def _format_call_block(name: str, arguments: str) -> str:
    try:
        args: Any = jsonlimits.loads(
            arguments, "arguments", jsonlimits.MAX_ARGUMENT_DEPTH,
            max_chars=jsonlimits.MAX_ARGUMENT_CHARS,
        )
    except ValueError:
        args = arguments
    payload = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    # A fence inside a string would end the block early when the reply is parsed again:
    # backticks occur only inside JSON strings, where the escape reads the same.
    payload = payload.replace("```", "\\u0060\\u0060\\u0060")
    return f"```tool_call\n{payload}\n```"


class ChatTemplate:
    """Renders OpenAI-format messages to the prompt text the model sees."""

    def __init__(
        self,
        source: str | None,
        *,
        bos_token: str = "",
        eos_token: str = "",
        origin: str = "gguf",
    ) -> None:
        self.origin = origin if source else "fallback:chatml"
        self.source = source or CHATML_TEMPLATE
        self.bos_token = bos_token
        self.eos_token = eos_token
        #: Recall's excerpts are shown without their labels (the transcript form lays the
        #: labeled block out itself; ``bench.recall_leak`` shows a model both).
        self.recall_unlabeled = True
        #: Texts a reply stops at besides the end-of-turn markers (the transcript form's).
        self.stops: tuple[str, ...] = ()
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, undefined=jinja2.ChainableUndefined
        )
        env.globals["raise_exception"] = _raise_exception
        env.filters["tojson"] = _tojson
        try:
            self._template = env.from_string(self.source)
            self._raw([{"role": "user", "content": "u"}], None)
        except Exception:  # a broken template in a file: fall back, say so in origin
            self.origin = "fallback:chatml (template in file failed to render)"
            self.source = CHATML_TEMPLATE
            self._template = env.from_string(self.source)
        self.native_tools = "tools" in self.source and "tool_calls" in self.source
        #: The template writes a call's arguments itself (``arguments | tojson``, as Qwen's,
        #: Llama 3's and Hermes' do): it is given the object, not our JSON text, which it
        #: would print as a quoted string no model was trained on.
        self.arguments_as_object = self.native_tools and self._writes_argument_objects()
        two_users = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        self.strict_alternation = not self._renders(two_users)
        self.supports_system = self._renders(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        )
        #: The text a tool result opens with in the prompt, after its role's header:
        #: ``<tool_response>`` for Qwen2.5's and Hermes' templates, ``[Tool result:`` for
        #: the text protocol ("" when a result has no opening text of its own).
        self.result_tag = self._result_opening()

    def _writes_argument_objects(self) -> bool:
        call: dict[str, Any] = {"id": "call_1", "type": "function",
                "function": {"name": "probe_tool", "arguments": {"probe_key": "probe_value"}}}
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
        try:
            text = self._raw(messages, None, add_generation_prompt=False)
        except Exception:
            return False
        return '"probe_key": "probe_value"' in text or '"probe_key":"probe_value"' in text

    def _result_opening(self) -> str:
        """Found by rendering a probe result and a user message with the same text after the
        same call: what the result has before that text that the user message has not."""
        mark = "probe_result_text"
        call: dict[str, Any] = {"id": "call_1", "type": "function",
                                "function": {"name": _PROBE_TOOL, "arguments": "{}"}}
        before: list[dict[str, Any]] = [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
        result = {"role": "tool", "tool_call_id": "call_1", "name": _PROBE_TOOL,
                  "content": mark}
        try:
            as_result = self.render([*before, result], add_generation_prompt=False)
            as_user = self.render([*before, {"role": "user", "content": mark}],
                                  add_generation_prompt=False)
        except Exception:
            return ""
        if mark not in as_result or mark not in as_user:
            return ""
        opening = as_result[: as_result.index(mark)]
        header = as_user[: as_user.index(mark)]
        shared = 0
        while (shared < min(len(opening), len(header))
               and opening[shared] == header[shared]):
            shared += 1
        rest = opening[shared:]
        if header[shared:].strip():  # results have a role header of their own ("...tool\n")
            rest = rest.partition("\n")[2]
        lines = [line.strip() for line in rest.splitlines() if line.strip()]
        tag = lines[-1] if lines else ""
        # The text protocol names the tool ("[Tool result: NAME]"): the tag is what precedes it.
        return tag.split(_PROBE_TOOL, 1)[0].strip()

    def _renders(self, messages: list[dict[str, Any]]) -> bool:
        """Whether the template renders ``messages`` (some raise on a shape they refuse)."""
        try:
            self._raw(messages, None)
        except Exception:
            return False
        return True

    def _raw(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        add_generation_prompt: bool = True,
    ) -> str:
        return self._template.render(
            messages=list(messages),
            tools=list(tools) if tools else None,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
        )

    def adapt(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
    ) -> list[dict[str, Any]]:
        """Messages as this template is given them: recall's excerpts without their labels
        (:func:`unlabeled`), the text protocol applied if needed, the system message folded
        into the first user one if refused, same roles merged if the template insists on
        alternation."""
        given = unlabeled(messages) if self.recall_unlabeled else [dict(m) for m in messages]
        if self.native_tools:
            return given
        out: list[dict[str, Any]] = []
        for m in given:
            role = m["role"]
            content = m.get("content") or ""
            if role == "assistant" and m.get("tool_calls"):
                blocks = [
                    format_call_block(c["function"]["name"], c["function"]["arguments"])
                    for c in m["tool_calls"]
                ]
                content = "\n".join([content, *blocks]) if content else "\n".join(blocks)
                out.append({"role": "assistant", "content": content})
            elif role == "tool":
                name = m.get("name") or "tool"
                out.append({"role": "user", "content": f"{TOOL_RESULT} {name}]\n{content}"})
            else:
                out.append({"role": role, "content": content})
        if tools:
            protocol = TOOL_PROTOCOL.format(tools=describe_tools(tools))
            if out and out[0]["role"] == "system":
                out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + protocol}
            else:
                out.insert(0, {"role": "system", "content": protocol})
        if not self.supports_system and out and out[0]["role"] == "system":
            system = out.pop(0)["content"]
            if out and out[0]["role"] == "user":
                out[0] = {"role": "user", "content": system + "\n\n" + out[0]["content"]}
            else:
                out.insert(0, {"role": "user", "content": system})
        if self.strict_alternation:
            out = _merge_same_role(out)
        return out

    def render(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        adapted = self.adapt(messages, tools)
        if self.arguments_as_object:
            adapted = [_with_argument_objects(m) for m in adapted]
        text = self._raw(adapted, tools if self.native_tools else None, add_generation_prompt)
        return valid_text(text)  # what a tokenizer can encode (no lone surrogates)


def unlabeled(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` (copies) with recall's block in a user message shown without its labels
    (:func:`assistant.llm.transcript_recall.without_labels`)."""
    out = []
    for m in messages:
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, str):
            m = {**m, "content": without_labels(content)}
        out.append(dict(m))
    return out


#: The tool name a probe render uses (no real tool has it).
_PROBE_TOOL = "probe_tool"


def _with_argument_objects(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with each call's JSON arguments as the object they hold (a call whose
    text is no object keeps its text)."""
    out = dict(message)
    calls = message.get("tool_calls")
    if not calls:
        return out
    converted = []
    for call in calls:
        fn = dict(call.get("function") or {})
        args = fn.get("arguments")
        if isinstance(args, str):
            fn["arguments"] = _argument_object(args)
        converted.append({**call, "function": fn})
    out["tool_calls"] = converted
    return out


@functools.lru_cache(maxsize=4096)
def _argument_object(arguments: str) -> Any:
    """The object ``arguments`` holds, else the text (shared between renders: the immutable
    sandbox keeps a template from changing it)."""
    try:
        value = jsonlimits.loads(
            arguments, "arguments", jsonlimits.MAX_ARGUMENT_DEPTH,
            max_chars=jsonlimits.MAX_ARGUMENT_CHARS,
        )
    except ValueError:
        return arguments
    return value if isinstance(value, dict) else arguments


def _merge_same_role(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"]:
            content = merged[-1]["content"] + "\n\n" + m["content"]
            merged[-1] = {"role": m["role"], "content": content}
        else:
            merged.append(dict(m))
    return merged


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


def _tojson(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)
