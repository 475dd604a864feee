"""Tool-call markup in a model's reply: fenced, tagged or bare JSON calls, found and cut.
More in docs/COMPACTION.md (``summary/clean.py``)."""

from __future__ import annotations

import re

_FENCED_CALL = re.compile(r"```[ \t]*(?:tool_call|tool|json|function)?[^\n]*\n.*?(?:```|\Z)",
                          re.DOTALL)
_TAGGED_CALL = re.compile(r"<(tool_call|function_call|tool)>.*?(?:</\1>|\Z)", re.DOTALL)
_JSON_CALL = re.compile(r"\{\s*\"(?:name|function)\"\s*:\s*\"[^\"]*\"\s*,\s*"
                        r"\"(?:arguments|parameters)\"\s*:")


def strip_tool_markup(text: str) -> tuple[str, int]:
    """``text`` without tool-call blocks (fenced, tagged or bare JSON); (text, how many)."""
    found = 0

    def dropped(_m: re.Match[str]) -> str:
        nonlocal found
        found += 1
        return ""

    def fenced(m: re.Match[str]) -> str:
        block = m.group(0)
        if _JSON_CALL.search(block) or block.lstrip("`").lower().startswith("tool_call"):
            return dropped(m)
        return block

    text = _FENCED_CALL.sub(fenced, text)
    text = _TAGGED_CALL.sub(dropped, text)
    out: list[str] = []
    for line in text.splitlines():
        m = _JSON_CALL.search(line)
        if m is None:
            out.append(line)
            continue
        found += 1
        head = line[: m.start()].rstrip()
        if head.strip(" -*"):
            out.append(head)
    return "\n".join(out).strip(), found


def has_tool_markup(text: str) -> bool:
    """Whether ``text`` holds a tool call in any of the forms a model writes one."""
    return strip_tool_markup(text)[1] > 0 or "<tool_call" in text or "</tool_call>" in text
