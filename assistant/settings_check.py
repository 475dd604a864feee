"""Settings checked against the model they will run with.

pydantic validates each value on its own; this checks what only makes sense for a given
model, at save time (the settings dialog) and when a model has loaded (settings from the
file):

* **The system prompt** is sent with every message and can never be summarized, so it may
  take at most :data:`SYSTEM_PROMPT_SHARE` of the context window in force (counted with the
  model's own tokenizer). A longer one is refused with a message; before this check a
  200 KB prompt made every turn fail.
* **A window beyond the model's trained length** is capped to it (the other values are
  scaled, see ``ModePolicy.effective``); the check says so instead of doing it silently.
  Absurd windows (over ``MAX_WINDOW``) are refused by the settings model itself.

Messages name fields the way the settings dialog shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from assistant.config import Mode, Settings, setting_name

#: Largest share of the context window the system prompt may take.
SYSTEM_PROMPT_SHARE = 0.25


@dataclass(frozen=True)
class ModelCheck:
    """``errors`` must be fixed before saving; ``notes`` say what was capped."""

    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def system_prompt_limit(window: int) -> int:
    """Most tokens the system prompt may have in a window of ``window`` tokens."""
    return int(window * SYSTEM_PROMPT_SHARE)


def check_against_model(
    settings: Settings,
    trained_context: int | None,
    count_tokens: Callable[[str], int] | None,
) -> ModelCheck:
    """Check ``settings`` for a model trained on ``trained_context`` tokens (None when
    unknown) whose tokenizer is ``count_tokens`` (None before the model has loaded: the
    system prompt is then checked when it has)."""
    notes: list[str] = []
    errors: list[str] = []
    if trained_context:
        for name in ("local", "standard"):
            window = getattr(settings, name).window
            if window > trained_context:
                notes.append(
                    f"{setting_name((name, 'window'))} is {window:,} tokens, more than this "
                    f"model was trained on ({trained_context:,}): {trained_context:,} is used "
                    "and the other values of the mode are scaled to it."
                )
    if count_tokens is not None and settings.system_prompt:
        mode: Mode = settings.mode
        window = settings.effective_policy(trained_context).window
        limit = system_prompt_limit(window)
        tokens = count_tokens(settings.system_prompt)
        if tokens > limit:
            errors.append(
                f"{setting_name(('system_prompt',))}: it is {tokens:,} tokens, and it may use "
                f"at most a quarter of the context window ({limit:,} of {window:,} tokens in "
                f"{mode} mode). It is sent with every message and cannot be summarized, so a "
                "longer one leaves no room for the chat. Shorten it, or choose a model with a "
                "larger window."
            )
    return ModelCheck(tuple(errors), tuple(notes))
