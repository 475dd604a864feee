"""bench.tool_misuse: which first replies open a tool call (the replies Qwen2.5-Coder 1.5B
gave to "What is the capital of France?" with the tools offered, cut at 10-20 tokens)."""

from __future__ import annotations

import pytest

from bench.tool_misuse import opens_a_call


@pytest.mark.parametrize("reply, call", [
    ('{{"name": "read_file", "arguments": {"path": "data/capitals.txt', True),
    ('```json\n{\n  "name": "read', True),
    ('<tool_call>\n{"name": "read_file", "arguments": {"path": "capitals.txt"}}\n</tool_call>',
     True),
    ("The capital of France is Paris.", False),
    ("Paris.", False),
])
def test_a_reply_that_opens_a_call_is_counted(reply: str, call: bool) -> None:
    assert opens_a_call(reply) is call
