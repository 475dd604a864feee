"""What the context controller holds for a chat between calls, carried across a restart
(issue 43): the focus anchor beside recall's excerpts (where the shown history starts, so
the next prompt is the one the saved model state holds), the last prompt as sent (which an
in-context summary starts from) and the summaries written ahead of time (so the first
compaction after a restart takes the summary written before quitting instead of writing
one). Saved with the chat as a ``setting`` entry (:data:`SETTING`), read back on opening.

Everything here is a hint checked against the chat before use: an anchor by the digest of
the prompt up to it, a summary by the digests of the messages it summarizes, the last
prompt by the id of the chat's last message; a stale or damaged value is ignored (logged),
never used and never in the way of the messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from assistant.compaction.ahead import Precomputed
from assistant.compaction.summary import SummaryOutcome
from assistant.fieldnames import first_error

#: The name of the chat-file ``setting`` entry holding it.
SETTING = "context_state"
#: Version of the value's layout; another version is ignored (not an error).
VERSION = 1
#: Summaries written ahead carried at most (the newest first).
MAX_AHEAD = 2

_OUTCOME = TypeAdapter(SummaryOutcome)


@dataclass(frozen=True)
class Sent:
    """The last prompt sent, as :meth:`.controller.ContextController._chat_prefix` reads it."""

    pruned: frozenset[str]
    cuts: dict[str, str]
    render: tuple[str | None, bool] | None


@dataclass(frozen=True)
class Carried:
    """One chat's controller state: ``leaf`` is the id of its last message when taken."""

    leaf: str | None
    anchor: tuple[int, str] | None = None
    sent: Sent | None = None
    ahead: tuple[Precomputed, ...] = field(default_factory=tuple)


def to_json(carried: Carried) -> dict[str, Any]:
    """``carried`` as the JSON value of the chat's setting entry."""
    sent = carried.sent
    return {
        "version": VERSION,
        "leaf": carried.leaf,
        "anchor": list(carried.anchor) if carried.anchor is not None else None,
        "sent": None if sent is None else {
            "pruned": sorted(sent.pruned), "cuts": dict(sorted(sent.cuts.items())),
            "render": None if sent.render is None else list(sent.render),
        },
        "ahead": [_ahead_json(p) for p in carried.ahead[:MAX_AHEAD]],
    }


def from_json(value: Any) -> Carried | None:
    """The value read back; None for another version. ValueError (with the reason) when
    it is not one this code wrote."""
    if not isinstance(value, dict):
        raise ValueError("not an object")
    if value.get("version") != VERSION:
        return None
    leaf = value.get("leaf")
    if leaf is not None and not isinstance(leaf, str):
        raise ValueError("leaf is not a message id")
    return Carried(leaf, _anchor(value.get("anchor")), _sent(value.get("sent")),
                   tuple(_ahead(item) for item in _list(value.get("ahead"), "ahead")))


def usable_ahead(items: Sequence[Precomputed], digests: Sequence[str]) -> list[Precomputed]:
    """Of ``items`` (newest last), the newest :data:`MAX_AHEAD` written for a start of the
    messages with ``digests`` (:func:`.ahead.span_digests`): the others can never be used."""
    fit = [p for p in items if p.span and tuple(digests[:len(p.span)]) == p.span]
    return list(reversed(fit))[:MAX_AHEAD]


def _ahead_json(item: Precomputed) -> dict[str, Any]:
    return {
        "history": item.key[1], "first_kept_id": item.first_kept_id,
        "outcome": asdict(item.outcome), "seconds": item.seconds, "span": list(item.span),
        "context": item.context, "budget": item.budget,
    }


def _ahead(data: Any) -> Precomputed:
    if not isinstance(data, dict):
        raise ValueError("a summary written ahead is not an object")
    span = tuple(_strings(data.get("span"), "span"))
    history, budget, seconds = data.get("history"), data.get("budget"), data.get("seconds")
    first, context = data.get("first_kept_id"), data.get("context")
    if (not isinstance(history, int) or not isinstance(budget, int)
            or not isinstance(seconds, int | float) or not isinstance(first, str)
            or not isinstance(context, str) or not 0 <= history <= len(span)):
        raise ValueError("a summary written ahead has a field of the wrong kind")
    try:
        outcome = _OUTCOME.validate_python(data.get("outcome"))
    except ValidationError as exc:
        raise ValueError(f"a summary written ahead: {first_error(exc)}") from None
    return Precomputed((span, history, context, budget), first, outcome, float(seconds),
                       span, context, budget)


def _anchor(data: Any) -> tuple[int, str] | None:
    if data is None:
        return None
    if (not isinstance(data, list) or len(data) != 2 or not isinstance(data[0], int)
            or not isinstance(data[1], str) or data[0] < 0):
        raise ValueError("the focus anchor is not [index, digest]")
    return data[0], data[1]


def _sent(data: Any) -> Sent | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError("the last prompt is not an object")
    cuts = data.get("cuts")
    if not isinstance(cuts, dict) or not all(isinstance(v, str) for v in cuts.values()):
        raise ValueError("the last prompt's cuts are not texts")
    render = data.get("render")
    if render is not None and (
        not isinstance(render, list) or len(render) != 2
        or not (render[0] is None or isinstance(render[0], str))
        or not isinstance(render[1], bool)
    ):
        raise ValueError("the last prompt's rendering is not [message id, excerpts]")
    return Sent(frozenset(_strings(data.get("pruned"), "pruned")), dict(cuts),
                None if render is None else (render[0], render[1]))


def _list(data: Any, what: str) -> list[Any]:
    if not isinstance(data, list):
        raise ValueError(f"{what} is not a list")
    return data


def _strings(data: Any, what: str) -> list[str]:
    items = _list(data, what)
    if not all(isinstance(s, str) for s in items):
        raise ValueError(f"{what} holds something other than text")
    return items
