"""Hypothesis-made replies through the parser, the call block, the message and both
template kinds: never an exception (issue 28 item 1; the seeded 10,000-case run with the
agent loop and the session store is ``python -m bench.fuzz_replies``, and a bounded slice
of it is tests/bench/test_fuzz_replies.py)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from assistant.conversation import Message
from assistant.llm.template import ChatTemplate, format_call_block
from assistant.llm.toolcall import parse_tool_calls

PIECES = st.sampled_from(
    [
        "{", "}", "[", "]", '"', "\\", ":", ",", "```", "```tool_call\n", "```json\n",
        "<tool_call>", "</tool_call>", "<function=read_file>", "</function>", '"name"',
        '"arguments"', '"parameters"', '"read_file"', '"path"', '"a.txt"', "\x00", "\ud800",
        "\udcff", "\n", " ", "null", "1e999", "-0", '"\\u12"', '{"function": ',
    ]
)
DEEP = st.builds(lambda n, s: s * n, st.integers(0, 6_000), st.sampled_from(["[", '{"a": ']))
REPLIES = st.lists(st.one_of(PIECES, DEEP, st.text(max_size=20)), max_size=40).map("".join)

CHATML = ChatTemplate(None)
NATIVE = ChatTemplate(
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}"
    "{% for c in m.get('tool_calls') or [] %}[{{ c['function']['arguments'] }}]{% endfor %}\n"
    "{% endfor %}{% if tools %}tools{% endif %}"
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(REPLIES)
@example("\ud800\udcff")  # a pair the chat file's JSON reads back as one character
def test_any_reply_parses_renders_and_serializes(reply: str) -> None:
    parsed = parse_tool_calls(reply)
    for p in parsed.calls:
        block = format_call_block(p.call.name, p.call.arguments_json())
        assert block.startswith("```tool_call\n")
    calls = [p.call for p in parsed.calls]
    msg = Message(role="assistant", content=parsed.content, tool_calls=calls)
    shown = [{"role": "user", "content": "hi"}, msg.to_openai()]
    tools = [{"type": "function", "function": {"name": "read_file"}}]
    for template in (CHATML, NATIVE):
        template.render(shown, tools).encode("utf-8")  # a tokenizer can take it
    # As the session store writes and reads it: nothing changes.
    line = json.dumps(msg.model_dump(), ensure_ascii=True, allow_nan=False)
    again = Message.model_validate(json.loads(line))
    assert again.tool_calls == msg.tool_calls
    assert again.content == msg.content


@settings(max_examples=150, deadline=None)
@given(st.one_of(REPLIES, st.recursive(st.integers(), lambda c: st.lists(c, max_size=2))))
def test_any_native_call_is_imported_or_refused_with_a_reason(arguments: object) -> None:
    data = {
        "role": "assistant",
        "tool_calls": [{"id": "c", "function": {"name": "read_file", "arguments": arguments}}],
    }
    try:
        msg = Message.from_openai(data)
    except ValueError as exc:
        assert str(exc)
        return
    shown = msg.to_openai()
    CHATML.render([shown]).encode("utf-8")
    json.dumps(shown)
