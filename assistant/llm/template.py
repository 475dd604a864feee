"""Chat templates: from the GGUF metadata, with a documented fallback.

The template is the Jinja2 text in the GGUF key ``tokenizer.chat_template``. When a file has
none (or it fails to render), the fallback is ChatML (``<|im_start|>role\\n...<|im_end|>``),
the format SmolLM2 and many small instruct models use.

Tool calls reach the model one of two ways:

* **native**: the template itself renders ``tools`` and ``tool_calls`` (it mentions
  ``tools`` in its source); the tool schemas go to the template unchanged.
* **text protocol** (every other template): the tool list and the calling convention are
  appended to the system message (:data:`TOOL_PROTOCOL`), an assistant message's tool calls
  are written back as the fenced block the model is asked to produce, and tool results are
  sent as user messages starting ``[Tool result: NAME]``. Consecutive messages of the same
  role are merged when the template insists on alternating roles, and the system message is
  folded into the first user message when the template refuses a system role.

Either way the model's reply is parsed by :func:`assistant.llm.toolcall.parse_tool_calls`.
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
    """How an assistant tool call is written in the text protocol.

    ``arguments`` is embedded as the object it holds when it is one the parser would take
    (bounded nesting and size: :func:`assistant.jsonlimits.loads`), else as a JSON string,
    so a hostile call never breaks the render."""
    if isinstance(name, str) and isinstance(arguments, str):
        return _format_call_block(name, arguments)  # memoized: every render rewrites them all
    return _format_call_block.__wrapped__(name, arguments)


@functools.lru_cache(maxsize=4096)
def _format_call_block(name: str, arguments: str) -> str:
    try:
        args: Any = jsonlimits.loads(
            arguments,
            "arguments",
            jsonlimits.MAX_ARGUMENT_DEPTH,
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
        two_users = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        self.strict_alternation = not self._renders(two_users)
        self.supports_system = self._renders(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        )

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
        """Messages as this template is given them (text protocol applied if needed)."""
        if self.native_tools:
            return [dict(m) for m in messages]
        out: list[dict[str, Any]] = []
        for m in messages:
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
        text = self._raw(adapted, tools if self.native_tools else None, add_generation_prompt)
        return valid_text(text)  # what a tokenizer can encode (no lone surrogates)


def _merge_same_role(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"]:
            merged[-1] = {
                "role": m["role"],
                "content": merged[-1]["content"] + "\n\n" + m["content"],
            }
        else:
            merged.append(dict(m))
    return merged


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


def _tojson(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)
