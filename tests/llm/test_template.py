"""Chat templates: GGUF source, the ChatML fallback, and the text tool protocol."""

from __future__ import annotations

import json
from typing import Any

from assistant.llm.template import CHATML_TEMPLATE, ChatTemplate

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "start": {"type": "integer"}},
                "required": ["path"],
            },
        },
    }
]

STRICT = (
    "{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('roles must alternate') }}{% endif %}"
    "<{{ m['role'] }}>{{ m['content'] }}</{{ m['role'] }}>{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def test_no_template_falls_back_to_chatml() -> None:
    t = ChatTemplate(None)
    assert t.origin == "fallback:chatml"
    out = t.render([{"role": "user", "content": "hi"}])
    assert out == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_broken_template_falls_back_and_says_so() -> None:
    t = ChatTemplate("{% for x in %}", origin="gguf")
    assert t.origin.startswith("fallback:chatml")
    assert t.source == CHATML_TEMPLATE


def test_text_protocol_describes_tools_in_the_system_message() -> None:
    t = ChatTemplate(None)
    assert not t.native_tools
    out = t.render(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "x"}], TOOLS
    )
    assert out.count("<|im_start|>system") == 1
    assert "Be brief." in out and "```tool_call" in out
    assert "read_file(path: string, start?: integer): Read a file." in out


def test_tool_calls_and_results_are_written_back_in_the_protocol() -> None:
    t = ChatTemplate(None)
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "read a.txt"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "hello"},
    ]
    adapted = t.adapt(msgs, None)
    assert adapted[1]["role"] == "assistant"
    block = adapted[1]["content"]
    payload = json.loads(block.split("\n")[1])
    assert payload == {"name": "read_file", "arguments": {"path": "a.txt"}}
    assert adapted[2] == {"role": "user", "content": "[Tool result: read_file]\nhello"}


def test_strict_alternation_templates_get_merged_roles() -> None:
    t = ChatTemplate(STRICT)
    assert t.strict_alternation
    out = t.render(
        [
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c", "name": "read_file", "content": "r"},
            {"role": "user", "content": "b"},
        ]
    )
    assert out.count("<user>") == 2  # tool result and next user message merged
    assert "[Tool result: read_file]\nr\n\nb" in out


def test_native_tool_templates_receive_tools() -> None:
    native = (
        "{% if tools %}TOOLS:{{ tools | tojson }}\n{% endif %}"
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}"
        "{% if m.tool_calls %}{% for c in m.tool_calls %}[call {{ c.function.name }}]"
        "{% endfor %}{% endif %}\n{% endfor %}"
    )
    t = ChatTemplate(native)
    assert t.native_tools
    out = t.render([{"role": "user", "content": "x"}], TOOLS)
    assert out.startswith('TOOLS:[{"type": "function"')
    assert "```tool_call" not in out


def test_templates_without_a_system_role_get_it_folded_into_the_first_user_turn() -> None:
    t = ChatTemplate(STRICT)
    assert not t.supports_system
    out = t.render([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    assert out == "<user>Be brief.\n\nhi</user><assistant>"


def test_a_call_block_with_hostile_arguments_renders_them_as_text() -> None:
    """Issue 28 item 1: a server's native call (or any caller) with arguments 50,000
    levels deep, or longer than a call may be, is written as a string, never decoded."""
    from assistant.jsonlimits import MAX_ARGUMENT_CHARS
    from assistant.llm.template import format_call_block

    deep = "[" * 50_000 + "]" * 50_000
    block = format_call_block("write_file", deep)
    payload = json.loads(block.removeprefix("```tool_call\n").removesuffix("\n```"))
    assert payload == {"name": "write_file", "arguments": deep}
    long = json.dumps({"content": "x" * MAX_ARGUMENT_CHARS})
    block = format_call_block("write_file", long)
    assert json.loads(block.split("\n")[1])["arguments"] == long
    assert json.loads(format_call_block("f", '{"a": 1}').split("\n")[1])["arguments"] == {"a": 1}


#: A template that writes a call's arguments with ``tojson`` (as Qwen2.5's does).
TOJSON_ARGUMENTS = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}"
    '<tool_call>{"name": "{{ c.function.name }}", "arguments": '
    "{{ c.function.arguments | tojson }}}</tool_call>"
    "{% endfor %}{% endif %}\n{% endfor %}{% if tools %}{% endif %}"
)


def _call_message(arguments: str) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "read_file", "arguments": arguments}}]}


def test_a_template_that_writes_arguments_with_tojson_gets_the_object() -> None:
    """Issue 45: Qwen's template writes ``arguments | tojson``; given our JSON text it wrote
    a quoted string ("{\\"path\\": ...}"), which the model then imitated in its own calls."""
    t = ChatTemplate(TOJSON_ARGUMENTS)
    assert t.native_tools and t.arguments_as_object
    out = t.render([{"role": "user", "content": "x"}, _call_message('{"path": "notes.txt"}')])
    assert '"arguments": {"path": "notes.txt"}}' in out
    assert '\\"path\\"' not in out


def test_arguments_that_are_no_object_stay_text() -> None:
    t = ChatTemplate(TOJSON_ARGUMENTS)
    out = t.render([{"role": "user", "content": "x"}, _call_message('{path: notes.txt')])
    assert '"arguments": "{path: notes.txt"' in out


def test_a_template_that_takes_text_or_objects_writes_the_call_once() -> None:
    """The test data template prints a string as it is and an object with tojson."""
    from pathlib import Path

    source = (Path(__file__).parents[1] / "data" / "chatml_tools.jinja").read_text()
    t = ChatTemplate(source)
    assert t.native_tools
    out = t.render([{"role": "user", "content": "x"}, _call_message('{"path": "a"}')], TOOLS)
    assert '"arguments": {"path": "a"}}' in out


def test_a_chat_model_is_shown_recalls_excerpts_without_their_labels() -> None:
    """Models copied "(turn 2, I said, line 1)" into replies (tests/llm/
    test_recall_labels_real.py): the texts come, the labels do not; a message without a
    block, and the transcript form (it lays the labeled block out itself), are unchanged."""
    from assistant.llm.transcript import TranscriptTemplate
    from bench.recall_leak import block_text

    block = block_text([
        ("turn 2, I said, line 1", "def parse(path):"),
        ("turn 3, read_file src/io.py, lines 4-5", "for line in f:\n    yield line.strip()"),
    ])
    messages = [
        {"role": "user", "content": "- (turn 9, I said) is how my notes look."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": f"{block}\n\nRepeat the code once more."},
    ]
    shown = ChatTemplate(CHATML_TEMPLATE).render(messages)
    assert "turn 2" not in shown and "read_file" not in shown and "I said, line" not in shown
    assert ("From earlier in this chat:\ndef parse(path):\n\nfor line in f:\n"
            "    yield line.strip()\n\nRepeat the code once more.") in shown
    assert "- (turn 9, I said) is how my notes look." in shown  # the user's own text
    assert messages[2]["content"].startswith(block)  # the caller's messages are not changed
    base = TranscriptTemplate().render(messages)
    assert "Earlier I said, line 1: def parse(path):" in base
    assert "From read_file src/io.py, lines 4-5: for line in f:" in base


def _with_tool_results(opening: str, closing: str, role: str = "user") -> str:
    """A native template like the test data one whose results are written
    ``<|im_start|>ROLE\\n`` + ``opening`` + the result + ``closing``."""
    from pathlib import Path

    source = (Path(__file__).parents[1] / "data" / "chatml_tools.jinja").read_text()
    qwen = "'<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response>"
    assert qwen in source
    return source.replace(qwen, f"'<|im_start|>{role}\\n{opening}' + message.content + "
                          f"'{closing}")


def test_the_tag_a_tool_result_opens_with_is_found_by_rendering_one() -> None:
    """A reply that starts with it writes out a result instead of answering (issue 45): the
    tag is the template's, whatever it is, not Qwen's spelled out in the code."""
    from pathlib import Path

    qwen_like = (Path(__file__).parents[1] / "data" / "chatml_tools.jinja").read_text()
    assert ChatTemplate(qwen_like).result_tag == "<tool_response>"
    assert ChatTemplate(_with_tool_results("[TOOL_RESULTS] ", " [/TOOL_RESULTS]")
                        ).result_tag == "[TOOL_RESULTS]"
    # A role header of its own is no tag; text after it is.
    assert ChatTemplate(_with_tool_results("", "", role="tool")).result_tag == ""
    assert ChatTemplate(_with_tool_results("<result>\\n", "\\n</result>", role="tool")
                        ).result_tag == "<result>"
    # The text protocol: "[Tool result: NAME]", whatever the tool's name.
    assert ChatTemplate(None).result_tag == "[Tool result:"
    assert ChatTemplate(STRICT).result_tag == "[Tool result:"
