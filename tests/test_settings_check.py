"""Settings checked against the loaded model (issue 18, item 7)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from assistant.config import MAX_WINDOW, ModePolicy, Settings, default_local, setting_name
from assistant.settings_check import check_against_model, system_prompt_limit
from tests.fakes.scripted import ScriptedBackend

COUNT = ScriptedBackend().count
BIG_PROMPT = "Always answer in formal English and cite the file you used. " * 3_500  # ~200 KB


def test_the_default_settings_pass_for_the_embedded_model() -> None:
    check = check_against_model(Settings(), 8192, COUNT)
    assert check.errors == ()


def test_a_system_prompt_over_a_quarter_of_the_window_is_refused() -> None:
    settings = Settings(system_prompt=BIG_PROMPT)
    check = check_against_model(settings, 8192, COUNT)
    (error,) = check.errors
    tokens = COUNT(BIG_PROMPT)
    assert error.startswith(f"System prompt: it is {tokens:,} tokens")
    assert "at most a quarter of the context window (2,048 of 8,192 tokens in local mode)" in error
    assert "cannot be summarized" in error
    # Just under the share passes.
    words = "word " * (system_prompt_limit(8192) - 10)
    assert not check_against_model(Settings(system_prompt=words), 8192, COUNT).errors


def test_the_share_follows_the_mode_in_force() -> None:
    prompt = "word " * 5_000  # over a quarter of 8,192, under a quarter of 32,768
    assert check_against_model(Settings(system_prompt=prompt), 32_768, COUNT).errors  # local
    standard = Settings(system_prompt=prompt, mode="standard")
    assert not check_against_model(standard, 32_768, COUNT).errors


def test_without_the_tokenizer_only_the_windows_are_checked() -> None:
    check = check_against_model(Settings(system_prompt=BIG_PROMPT), 8192, None)
    assert not check.errors


def test_windows_beyond_the_trained_length_are_capped_with_a_note() -> None:
    check = check_against_model(Settings(), 8192, COUNT)
    assert check.notes == (
        "Local mode › Context window is 10,000 tokens, more than this model was trained on "
        "(8,192): 8,192 is used and the other values of the mode are scaled to it.",
        "Standard mode › Context window is 131,072 tokens, more than this model was trained "
        "on (8,192): 8,192 is used and the other values of the mode are scaled to it.",
    )
    assert check_against_model(Settings(), 200_000, COUNT).notes == ()


def test_absurd_windows_are_refused_not_scaled_to_nothing() -> None:
    with pytest.raises(ValidationError) as info:
        Settings.model_validate({"local": {**default_local().model_dump(), "window": 10**12}})
    err = info.value.errors()[0]
    assert setting_name(err["loc"]) == "Local mode › Context window"
    assert "less than or equal to 1048576" in err["msg"]
    # The largest window allowed still leaves protect and minimum above zero when scaled to
    # a small model.
    policy = ModePolicy(**{**default_local().model_dump(), "window": MAX_WINDOW})
    small = policy.effective("local", 4096)
    assert small.scaled and small.protect > 0 and small.minimum > 0
