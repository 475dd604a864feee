"""Recall's excerpt block as the transcript form shows it to a base model.

Recall writes its excerpts into the latest user message as one labeled block (a heading
line, one ``- (turn N, source) text`` line per excerpt). A 270M base model copied the labels
instead of answering, so :func:`lay_out` writes each excerpt as a plain line ("Earlier I
said: ...") between the question and its restatement, the worked examples' facts written
alike: the real session 7/18 against 2/18, W4 11/22 against 8/22, W2 17/26 against 15/26
(``python -m bench.recall_form``; docs/ANSWERS.md, "gemma-3-270m").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The first line of recall's block when it is placed before the user's message ...
HEADING_BEFORE = "Earlier in this chat (excerpts that may help with my message below):"
#: ... and after it (that placement is shown as recall wrote it).
HEADING_AFTER = "Earlier in this chat (excerpts that may help with my message above):"

_ITEM = re.compile(r"- \((turn \d+, .*?)\) ?(.*)")
_LABEL = re.compile(r"(turn \d+), (.*?)(?:, (lines? [\d-]+))?")


@dataclass(frozen=True)
class Excerpt:
    """One excerpt of the block: its label's parts and its text."""

    turn: str  # "turn 3"
    source: str  # "I said", "you called", "you replied", "read_file notes.txt"
    lines: str  # "line 17", "lines 3-5", or ""
    text: str


@dataclass(frozen=True)
class Block:
    """A user message split into recall's excerpts and what the user wrote."""

    excerpts: tuple[Excerpt, ...]
    message: str


#: A layout: (the adapted messages, the latest user message's index, its block, the worked
#: examples as messages) -> the messages to render.
Layout = Callable[[list[dict[str, Any]], int, Block, list[dict[str, Any]]], list[dict[str, Any]]]


def split_block(content: str) -> Block | None:
    """``content`` split into recall's block and the message; None (shown as it is) when it
    does not start with a block that parses."""
    head = HEADING_BEFORE + "\n"
    if not content.startswith(head):
        return None
    block, sep, message = content[len(head):].partition("\n\n")
    if not sep or not message.strip():
        return None
    items: list[list[str]] = []
    for line in block.split("\n"):
        if line.startswith("- ("):
            items.append([line])
        elif line.startswith("  ") and items:
            items[-1].append(line[2:])
        else:
            return None
    excerpts = []
    for lines in items:
        item = _ITEM.fullmatch(lines[0])
        label = _LABEL.fullmatch(item.group(1)) if item else None
        if item is None or label is None:
            return None
        text = "\n".join([item.group(2), *lines[1:]]).strip()
        excerpts.append(Excerpt(label.group(1), label.group(2), label.group(3) or "", text))
    return Block(tuple(excerpts), message)


#: The heading of recall's block as a chat model is shown it (:func:`without_labels`).
UNLABELED_HEADING = "From earlier in this chat:"


def without_labels(content: str) -> str:
    """``content`` with recall's block shown to an instruction-tuned model by its own chat
    template: the excerpts' texts, one paragraph each, under a short heading, without their
    labels. Given "- (turn 2, I said, line 1) ..." lines, models repeating the text copied
    the labels into the reply: SmolLM2 in 4 of 13 recall prompts, none without them, and
    Qwen2.5-Coder 0.5B answered more of them without (``python -m bench.recall_leak``;
    docs/ANSWERS.md, "Recall's labels in replies"). ``content`` without a block is returned
    as it is."""
    if not content.startswith(HEADING_BEFORE):
        return content
    block = split_block(content)
    if block is None:
        return content
    texts = "\n\n".join(e.text for e in block.excerpts)
    return f"{UNLABELED_HEADING}\n{texts}\n\n{block.message}"


def plain_line(e: Excerpt) -> str:
    """An excerpt as a plain line of context: "From read_file a.py, line 17: ..."."""
    where = f", {e.lines}" if e.lines else ""
    if e.source == "I said":
        return f"Earlier I said{where}: {e.text}"
    if e.source == "you replied":
        return f"Earlier you replied{where}: {e.text}"
    if e.source == "you called":
        return f"Earlier you ran {e.text}"
    return f"From {e.source}{where}: {e.text}"


def plain_block(block: Block) -> str:
    """The excerpts as plain lines, oldest first (recall's order)."""
    return "\n".join(plain_line(e) for e in block.excerpts)


def said_examples(shots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The worked examples with their facts written as the user's excerpts are."""
    out = []
    for m in shots:
        if m["role"] == "user":
            fact, _, question = str(m["content"]).partition("\n\n")
            m = {**m, "content": f"Earlier I said: {fact}\n\n{question}"}
        out.append(m)
    return out


def lay_out(
    out: list[dict[str, Any]], at: int, block: Block, shots: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The shipped layout: the examples as excerpts, then the question, its excerpts as
    plain lines, the question again."""
    msg = {**out[at], "content": f"{block.message}\n\n{plain_block(block)}\n\n{block.message}"}
    return out[:at] + said_examples(shots) + [msg] + out[at + 1:]
