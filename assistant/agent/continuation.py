"""Continue generation: in place where the backend takes tokens, else by asking and keeping
only what is new (docs/ARCHITECTURE.md, "Continue generation")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assistant.conversation import Message
from assistant.llm.base import ChatMessages, KVCacheAware, PromptCounter, TokenGenerator

#: What the model is asked when it cannot continue in place (never saved).
CONTINUE_REQUEST = (
    "Continue your previous reply exactly where it stopped. Do not repeat anything you "
    "already wrote and do not comment on continuing: write only the rest."
)
#: Words of the reply's end quoted in the request (small models find the seam by it).
SEAM_WORDS = 12
#: The least overlap at the seam taken as a repeat (shorter ones happen by chance).
MIN_SEAM = 12


def can_continue_in_place(backend: object) -> bool:
    """Whether ``backend`` takes prompt tokens (so a turn can be left open)."""
    return isinstance(backend, TokenGenerator) and isinstance(backend, KVCacheAware)


def open_turn(
    backend: object,
    messages: ChatMessages,
    tools: Sequence[dict[str, Any]],
    reply: Message,
) -> list[int] | None:
    """The prompt tokens of ``messages`` cut right after ``reply``'s text; None when the prompt
    does not hold it as written or the backend cannot take tokens."""
    if not (can_continue_in_place(backend) and isinstance(backend, PromptCounter)):
        return None
    assert isinstance(backend, KVCacheAware)
    seam = reply.content.rstrip()
    if not seam:
        return None
    rendered = backend.render_prompt(messages, tools)
    at = rendered.rfind(seam)
    if at < 0:
        return None
    return backend.tokenize_prompt(rendered[: at + len(seam)])


def continue_request(reply: Message) -> str:
    """The request to go on, quoting where the reply stopped."""
    words = reply.content.split()
    tail = " ".join(words[-SEAM_WORDS:])
    if not tail:
        return CONTINUE_REQUEST
    more = "…" if len(words) > SEAM_WORDS else ""
    return f'{CONTINUE_REQUEST} It stopped at: "{more}{tail}"'


def only_new(old: str, more: str) -> str:
    """What ``more`` adds to ``old`` (a repeat or an overlap of :data:`MIN_SEAM` is dropped)."""
    head, body = old.strip(), more.lstrip()
    if not head:
        return more
    if body.startswith(head):
        return body[len(head):]
    if head.startswith(body.strip()):
        return ""
    for size in range(min(len(head), len(body)), MIN_SEAM - 1, -1):
        if head.endswith(body[:size]):
            return body[size:]
    return more


def joined(old: str, more: str, *, in_place: bool) -> str:
    """The longer reply (asked: a space added between when neither side has one)."""
    if old[-1:].isspace():
        return old + more.lstrip(" ")
    if in_place or more[:1].isspace():
        return old + more
    return old + " " + more
