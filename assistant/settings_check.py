"""Settings checked against the model they run with, at save time and after a load. The
system prompt is never summarized, so it may take at most :data:`SYSTEM_PROMPT_SHARE` of
the window (a 200 KB prompt made every turn fail); a window beyond the model's is capped
(and said)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from assistant.config import MODE_NAMES, Mode, Settings, setting_name

#: Largest share of the context window the system prompt may take.
SYSTEM_PROMPT_SHARE = 0.25


@dataclass(frozen=True)
class ModelCheck:
    """``errors`` must be fixed before saving; ``notes`` say what was capped."""

    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def system_prompt_limit(window: int) -> int:
    """Most tokens the system prompt may have in a window of ``window`` tokens."""
    return int(window * SYSTEM_PROMPT_SHARE)


def check_against_model(
    settings: Settings, trained_context: int | None,
    count_tokens: Callable[[str], int | None] | None,
) -> ModelCheck:
    """Check ``settings`` for a model of ``trained_context`` tokens counting with
    ``count_tokens`` (a count of None, not known yet, skips the system prompt's check)."""
    notes: list[str] = []
    errors: list[str] = []
    if trained_context:
        server = settings.engine.kind == "server"
        limit_is = "the server's window" if server else "this model was trained on"
        for name in MODE_NAMES:
            window = getattr(settings, name).window
            if window > trained_context:
                notes.append(
                    f"{setting_name((name, 'window'))} is {window:,} tokens, more than "
                    f"{limit_is} ({trained_context:,}): {trained_context:,} is used "
                    "and the other values of the mode are scaled to it."
                )
    if count_tokens is not None and settings.system_prompt:
        mode: Mode = settings.mode
        window = settings.effective_policy(trained_context).window
        limit = system_prompt_limit(window)
        tokens = count_tokens(settings.system_prompt)
        if tokens is not None and tokens > limit:
            errors.append(
                f"{setting_name(('system_prompt',))}: it is {tokens:,} tokens, and it may use "
                f"at most a quarter of the context window ({limit:,} of {window:,} tokens in "
                f"{mode} mode). It is sent with every message and cannot be summarized, so a "
                "longer one leaves no room for the chat. Shorten it, or choose a model with a "
                "larger window."
            )
    return ModelCheck(tuple(errors), tuple(notes))
