"""The tool-call parser (assistant/llm/toolcall.py): every shape, and fuzzing."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from assistant.jsonlimits import MAX_ARGUMENT_DEPTH
from assistant.llm.template import ChatTemplate, format_call_block
from assistant.llm.toolcall import INVALID_NAME, MAX_CALLS, parse_tool_calls


def _one(text: str) -> tuple[str, dict[str, object], str | None]:
    parsed = parse_tool_calls(text)
    assert len(parsed.calls) == 1, parsed
    call = parsed.calls[0]
    return call.call.name, call.call.arguments, call.error


def test_plain_text_has_no_calls() -> None:
    parsed = parse_tool_calls("Just an answer, with {braces} and ```code```.")
    assert parsed.calls == []
    assert parsed.content == "Just an answer, with {braces} and ```code```."


def test_fenced_tool_call_block() -> None:
    text = 'Checking.\n```tool_call\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```\n'
    parsed = parse_tool_calls(text)
    assert parsed.content == "Checking."
    assert parsed.calls[0].call.name == "read_file"
    assert parsed.calls[0].call.arguments == {"path": "a.txt"}
    assert parsed.calls[0].error is None


def test_round_trip_of_the_template_block() -> None:
    block = format_call_block("grep", json.dumps({"pattern": "x", "path": "."}))
    assert _one(block) == ("grep", {"pattern": "x", "path": "."}, None)


def test_json_fence_and_bare_object() -> None:
    assert _one('```json\n{"name": "list_dir", "arguments": {}}\n```')[0] == "list_dir"
    name, args, err = _one('I will call {"name": "grep", "arguments": {"pattern": "a"}} now.')
    assert (name, args, err) == ("grep", {"pattern": "a"}, None)
    assert parse_tool_calls('{"name": "grep", "arguments": {}} ok').content == "ok"


def test_json_fence_that_is_not_a_call_is_prose() -> None:
    text = '```json\n{"users": [1, 2]}\n```'
    assert parse_tool_calls(text).calls == []
    assert parse_tool_calls(text).content == text


def test_tags_and_function_tags() -> None:
    assert _one('<tool_call>\n{"name": "list_dir", "arguments": {"path": "x"}}\n</tool_call>') == (
        "list_dir",
        {"path": "x"},
        None,
    )
    assert _one('<function=grep>{"pattern": "q"}</function>') == ("grep", {"pattern": "q"}, None)


def test_arguments_as_a_json_string() -> None:
    text = '```tool_call\n{"name": "read_file", "arguments": "{\\"path\\": \\"b.txt\\"}"}\n```'
    assert _one(text) == ("read_file", {"path": "b.txt"}, None)


def test_parameters_alias_and_function_wrapper() -> None:
    assert _one('{"name": "grep", "parameters": {"pattern": "p"}}')[1] == {"pattern": "p"}
    wrapped = (
        '<tool_call>{"type": "function", "function": {"name": "ls", "arguments": {}}}</tool_call>'
    )
    assert _one(wrapped)[0] == "ls"


def test_several_calls_in_order() -> None:
    text = (
        '```tool_call\n{"name": "a", "arguments": {}}\n```\nthen\n'
        '<tool_call>{"name": "b", "arguments": {}}</tool_call>\n'
        '```tool_call\n[{"name": "c", "arguments": {}}, {"name": "d", "arguments": {}}]\n```'
    )
    parsed = parse_tool_calls(text)
    assert [c.call.name for c in parsed.calls] == ["a", "b", "c", "d"]
    assert parsed.content == "then"
    assert len({c.call.id for c in parsed.calls}) == 4


def test_unclosed_block_at_the_end_is_read() -> None:
    assert _one('```tool_call\n{"name": "list_dir", "arguments": {}}')[0] == "list_dir"
    assert _one('<tool_call>{"name": "list_dir", "arguments": {}}')[0] == "list_dir"


@pytest.mark.parametrize(
    ("text", "name", "reason"),
    [
        ('```tool_call\n{"name": "read_file", "arguments": {path: x}}\n```', "read_file", "JSON"),
        ("```tool_call\nread_file(path='x')\n```", INVALID_NAME, "JSON"),
        ('```tool_call\n{"arguments": {}}\n```', INVALID_NAME, '"name"'),
        ('```tool_call\n{"name": "grep", "arguments": [1, 2]}\n```', "grep", "JSON object"),
        ('<tool_call>{"name": "grep", "arguments": "not json"}</tool_call>', "grep", "string"),
        ('```json\n{"name": "grep", "arguments": {oops}}\n```', "grep", "JSON"),
        ("<function=grep>pattern=x</function>", "grep", "JSON"),
    ],
)
def test_malformed_calls_are_errors_not_crashes(text: str, name: str, reason: str) -> None:
    parsed = parse_tool_calls(text)
    assert len(parsed.calls) == 1
    call = parsed.calls[0]
    assert call.call.name == name
    assert call.error is not None and reason in call.error
    assert call.call.raw_arguments is not None


def test_model_supplied_ids_are_not_trusted() -> None:
    parsed = parse_tool_calls('{"id": "call_1", "name": "a", "arguments": {}}')
    assert parsed.calls[0].call.id != "call_1"


_FRAGMENTS = st.sampled_from(
    [
        "```",
        "```tool_call\n",
        "```json\n",
        "<tool_call>",
        "</tool_call>",
        "<function=x>",
        "</function>",
        "{",
        "}",
        "[",
        "]",
        '"name"',
        ":",
        '"arguments"',
        ",",
        '"',
        "\\",
        "\n",
        '"read_file"',
        "{}",
        "null",
        "1e999",
        '"{\\"a\\": 1}"',
        " ",
        "text",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_FRAGMENTS, max_size=40).map("".join))
def test_fuzz_structured_fragments_never_crash(text: str) -> None:
    parsed = parse_tool_calls(text)
    for call in parsed.calls:
        assert isinstance(call.call.name, str) and call.call.name
        assert isinstance(call.call.arguments, dict)
        if call.error is None:
            assert call.call.raw_arguments is None


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_fuzz_any_text_never_crashes(text: str) -> None:
    parsed = parse_tool_calls(text)
    assert isinstance(parsed.content, str)


@settings(max_examples=200, deadline=None)
@given(
    st.from_regex(r"[a-z_]{1,20}", fullmatch=True),
    st.dictionaries(
        st.text(max_size=10), st.one_of(st.integers(), st.text(max_size=20)), max_size=4
    ),
)
# A fence inside an argument ended the written block early (found by this test).
@example(name="_", arguments={"```": 0})
def test_fuzz_valid_calls_round_trip(name: str, arguments: dict[str, object]) -> None:
    block = format_call_block(name, json.dumps(arguments))
    assert _one("Some prose.\n" + block) == (name, arguments, None)


def test_text_protocol_render_then_parse() -> None:
    """A call written back by the template parses to the same call."""
    template = ChatTemplate(None)
    msgs = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "z.txt"}'},
                }
            ],
        }
    ]
    rendered = template.adapt(msgs, None)[0]["content"]
    assert _one(rendered) == ("read_file", {"path": "z.txt"}, None)


# -- bounded work and nesting (issue 18, items 3 and 8) ----------------------------------------
ADVERSARIAL = {
    "open braces": "{" * 200_000,
    "brace-quote": '{"' * 100_000,
    "unclosed keys": '{"a":' * 40_000,
    "open strings": '{"a' * 66_000,
    "escapes": '{"\\' * 66_000,
    "brackets": "[" * 200_000,
}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=list(ADVERSARIAL))
def test_hostile_text_is_decoded_at_most_twice_over(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser decodes slices, never the text behind a failed try: the characters handed
    to the JSON decoder stay within a small multiple of the reply (the quadratic case decoded
    the whole prefix once per brace)."""
    decoded = [0]
    real_loads = json.loads

    def counting_loads(s: str | bytes, *args: object, **kwargs: object) -> object:
        decoded[0] += len(s)
        return real_loads(s, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(json, "loads", counting_loads)
    parsed = parse_tool_calls(text)
    assert parsed.calls == []
    assert parsed.content == text
    assert decoded[0] <= 2 * len(text)


def test_a_call_after_hostile_text_is_still_found() -> None:
    text = '{"a' * 50_000 + ' then {"name": "read_file", "arguments": {"path": "x.txt"}}'
    assert _one(text) == ("read_file", {"path": "x.txt"}, None)


def test_at_most_64_calls_per_reply() -> None:
    text = '{"name": "list_dir", "arguments": {}} ' * 1000
    parsed = parse_tool_calls(text)
    assert len(parsed.calls) == MAX_CALLS == 64
    fences = ("```tool_call\n{}\n```\n") * 500
    assert len(parse_tool_calls(fences).calls) == MAX_CALLS


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [17, 300, 600, 5000])
@pytest.mark.parametrize(
    "shape",
    [
        '```tool_call\n{{"name": "write_file", "arguments": {args}}}\n```',
        '{{"name": "write_file", "arguments": {args}}}',
        '<tool_call>{{"name": "write_file", "arguments": {args}}}</tool_call>',
        "<function=write_file>{args}</function>",
        '```tool_call\n{{"name": "write_file", "arguments": {quoted}}}\n```',
    ],
    ids=["fence", "bare", "tag", "function-tag", "string-arguments"],
)
def test_deeply_nested_arguments_are_an_error_call(shape: str, depth: int) -> None:
    args = _nested(depth)
    text = "Writing.\n" + shape.format(args=args, quoted=json.dumps(args))
    parsed = parse_tool_calls(text)
    assert len(parsed.calls) == 1
    call = parsed.calls[0]
    assert call.call.name == "write_file"
    assert call.error == "its arguments are nested more than 16 levels deep"
    assert call.call.arguments == {}
    # What the model wrote is kept and can be saved (serialization no longer fails).
    assert call.call.raw_arguments is not None
    call.call.model_dump_json()


def test_arguments_at_the_limit_are_fine() -> None:
    args = _nested(MAX_ARGUMENT_DEPTH)
    name, parsed_args, error = _one('{"name": "write_file", "arguments": ' + args + "}")
    assert (name, error) == ("write_file", None)
    assert json.dumps(parsed_args) == args


@pytest.mark.parametrize("text", [
    # Qwen2.5-Coder 1.5B, asked a question with the tools offered (its template shows calls
    # as {{"name": <function-name>, "arguments": <args-json-object>}}, and it copied that).
    '{{"name": "read_file", "arguments": {"path": "data/capitals.txt"}}}',
    '<tool_call>\n{{"name": "read_file", "arguments": {"path": "data/capitals.txt"}}}\n'
    "</tool_call>",
])
def test_a_call_in_doubled_braces_is_the_call_inside(text: str) -> None:
    parsed = parse_tool_calls(text)
    assert [(c.call.name, c.call.arguments, c.error) for c in parsed.calls] == [
        ("read_file", {"path": "data/capitals.txt"}, None)]
    assert parsed.content == ""


def test_doubled_braces_that_are_no_call_stay_prose() -> None:
    assert parse_tool_calls('x = {{"a": 1}}').calls == []
    assert parse_tool_calls('Use {{"name": "x"}} here.').calls == []
