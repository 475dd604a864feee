"""A streamed chat completion put together from its events, in the shapes llama.cpp's
server, llama-cpp-python and OpenAI-style servers send them."""

from __future__ import annotations

from typing import Any

from assistant.llm.server_reply import StreamedReply
from assistant.llm.toolcall import parse_tool_calls


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def test_text_streams_and_the_result_counts_it() -> None:
    reply = StreamedReply()
    assert reply.feed(_chunk({"role": "assistant", "content": None})) == ("", False)
    assert reply.feed(_chunk({"content": "Par"})) == ("Par", True)
    assert reply.feed(_chunk({"content": "is."})) == ("is.", True)
    reply.feed(_chunk({}, "stop"))
    reply.feed({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 3,
                                         "prompt_tokens_details": {"cached_tokens": 12}}})
    assert reply.text() == "Paris."
    assert reply.completion_tokens() == 3
    assert reply.prompt_tokens(99) == 30
    assert reply.cached_tokens() == 12
    assert reply.finish_reason(cancelled=False) == "stop"
    assert reply.finish_reason(cancelled=True) == "cancelled"


def test_native_tool_calls_in_pieces_become_calls_the_agent_parses() -> None:
    reply = StreamedReply()
    reply.feed(_chunk({"content": "Let me look."}))
    reply.feed(_chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                        "function": {"name": "read_file", "arguments": ""}}]}))
    reply.feed(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]}))
    reply.feed(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.txt"}'}}]}))
    reply.feed(_chunk({"tool_calls": [{"index": 1, "id": "c2", "function": {
        "name": "list_dir", "arguments": {"path": "."}}}]}))
    reply.feed(_chunk({}, "tool_calls"))
    parsed = parse_tool_calls(reply.text())
    assert parsed.content == "Let me look."
    assert [(p.call.name, p.call.arguments, p.error) for p in parsed.calls] == [
        ("read_file", {"path": "a.txt"}, None), ("list_dir", {"path": "."}, None)]
    assert reply.content == "Let me look."
    assert reply.finish_reason(cancelled=False) == "stop"


def test_llama_cpp_timings_and_progress() -> None:
    reply = StreamedReply()
    reply.feed({"choices": [], "prompt_progress": {"total": 500, "cache": 400,
                                                    "processed": 450, "time_ms": 10}})
    assert reply.progress == (450, 500)
    reply.feed(_chunk({"content": "x"}))
    assert reply.progress is None
    reply.feed(_chunk({}, "length", timings={"cache_n": 400, "prompt_n": 100,
                                              "predicted_n": 7}))
    assert reply.cached_tokens() == 400
    assert reply.completion_tokens() == 7
    assert reply.finish_reason(cancelled=False) == "length"


def test_a_server_that_reports_nothing() -> None:
    reply = StreamedReply()
    for piece in ("a", "b", "c"):
        reply.feed(_chunk({"content": piece}))
    assert reply.completion_tokens() == 3
    assert reply.prompt_tokens(42) == 42
    assert reply.cached_tokens() is None


def test_a_surrogate_pair_split_across_two_events_is_one_character() -> None:
    """Issue 47: a server sent an emoji as "\\ud83d" then "\\ude00" in two events; the reply
    was lost with "'utf-8' codec can't encode character '\\ud83d'"."""
    reply = StreamedReply()
    shown = [reply.feed(_chunk({"content": piece}))[0]
             for piece in ["Hi \ud83d", "\ude00 there", " \ud83d", "x \udce9", "\ud83e"]]
    reply.feed(_chunk({}, "stop"))
    assert shown == ["Hi ", "\U0001f600 there", " ", "\ufffdx \ufffd", ""]
    assert reply.text() == "Hi \U0001f600 there \ufffdx \ufffd\ufffd"
    reply.text().encode("utf-8")
    assert reply.deltas == 5


def test_native_call_arguments_with_lone_surrogates_are_valid_text() -> None:
    reply = StreamedReply()
    reply.feed(_chunk({"tool_calls": [{"index": 0, "function": {
        "name": "read_file", "arguments": '{"path": "caf\udce9.txt"}'}}]}))
    reply.text().encode("utf-8")
