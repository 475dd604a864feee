"""Naming the field a validation error is about, the way a person reads it: labels, ``item
3``, long names cut and long paths elided in the middle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import ValidationError

SEPARATOR = " › "
#: Longest single name shown, and most parts shown before the middle is elided.
MAX_NAME_CHARS = 40
MAX_PARTS = 4


def field_path(
    loc: Sequence[str | int], labels: Mapping[str, str] | None = None, *, skip: int = 0
) -> str:
    """``loc`` as "part › part", labelled, with the first ``skip`` parts dropped."""
    parts: list[str] = []
    for part in loc[skip:]:
        if isinstance(part, int):
            parts.append(f"item {part + 1}")
            continue
        name = labels.get(part, part) if labels is not None else part
        if not name:
            continue  # a label of "" hides a grouping level the user never sees
        if len(name) > MAX_NAME_CHARS:
            name = name[: MAX_NAME_CHARS - 1] + "…"
        parts.append(name)
    if len(parts) > MAX_PARTS:
        parts = [*parts[: MAX_PARTS - 2], "…", parts[-1]]
    return SEPARATOR.join(parts)


def first_error(
    exc: ValidationError, labels: Mapping[str, str] | None = None, *, skip: int = 0
) -> str:
    """The first error as ``field › path: message`` (just the message when it has no field)."""
    errors = exc.errors()
    if not errors:
        return str(exc).splitlines()[0]
    err = errors[0]
    where = field_path(tuple(err.get("loc", ())), labels, skip=skip)
    message = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if len(message) > 300:
        message = message[:299] + "…"
    return f"{where}: {message}" if where else message
