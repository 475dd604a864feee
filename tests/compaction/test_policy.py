"""Policy values per mode, refusal of inconsistent values, the effective-policy rule."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from assistant.config import (
    MIN_KEEP_RECENT,
    MIN_RESERVE,
    MIN_SUMMARY_BUDGET,
    STANDARD_KEEP_SHARE,
    ModePolicy,
    Settings,
    default_local,
    default_standard,
)


def test_local_defaults() -> None:
    p = default_local()
    assert (p.window, p.protect, p.minimum, p.reserve, p.keep_recent, p.summary_budget) == (
        10_000, 2_000, 500, 1_024, 3_000, 768,
    )


def test_standard_defaults() -> None:
    p = default_standard()
    assert (p.protect, p.minimum, p.reserve, p.keep_recent, p.summary_budget) == (
        40_000, 20_000, 16_384, 20_000, 13_107,
    )


def test_inconsistent_values_are_refused_naming_the_fields() -> None:
    with pytest.raises(ValidationError) as err:
        ModePolicy(window=4_000, protect=1, minimum=1, reserve=2_000, keep_recent=2_000,
                   summary_budget=1)
    text = str(err.value)  # the fields named as the settings dialog shows them
    assert "Reserve for the reply" in text and "Keep recent (unsummarized)" in text
    assert "Summary budget" in text and "Context window (4,000)" in text


def test_exactly_fitting_values_are_accepted() -> None:
    p = ModePolicy(window=3_000, protect=0, minimum=0, reserve=1_000, keep_recent=1_000,
                   summary_budget=1_000)
    assert p.window == 3_000


@pytest.mark.parametrize("field", ["protect", "minimum", "reserve", "keep_recent"])
def test_negative_values_are_refused_naming_the_field(field: str) -> None:
    values = dict(window=10_000, protect=1, minimum=1, reserve=1, keep_recent=1,
                  summary_budget=1)
    values[field] = -1
    with pytest.raises(ValidationError) as err:
        ModePolicy(**values)
    assert field in str(err.value)


def test_assignment_is_validated() -> None:
    p = default_local()
    with pytest.raises(ValidationError):
        p.reserve = 9_000


def test_effective_unchanged_when_model_is_large_enough() -> None:
    for trained in (None, 10_000, 32_768):
        eff = default_local().effective("local", trained)
        assert eff.window == 10_000 and not eff.scaled
        assert (eff.protect, eff.minimum, eff.reserve, eff.keep_recent, eff.summary_budget) == (
            2_000, 500, 1_024, 3_000, 768,
        )


def test_effective_scales_for_smollm2() -> None:
    eff = default_local().effective("local", 8_192)
    assert eff.scaled and eff.window == 8_192
    assert eff.protect == int(2_000 * 0.8192)
    assert eff.minimum == int(500 * 0.8192)
    assert eff.reserve == int(1_024 * 0.8192)
    assert eff.keep_recent == int(3_000 * 0.8192)
    assert eff.summary_budget == int(768 * 0.8192)
    assert eff.reserve + eff.keep_recent + eff.summary_budget <= eff.window


def test_standard_window_is_a_cap_on_the_trained_length() -> None:
    eff = default_standard().effective("standard", 8_192)
    assert eff.window == 8_192
    assert eff.reserve + eff.keep_recent + eff.summary_budget <= eff.window


WINDOWS = (1_024, 2_048, 4_096, 8_192, 32_768)


@pytest.mark.parametrize("window", WINDOWS)
def test_standard_keeps_at_least_what_local_keeps_and_differs(window: int) -> None:
    """Issue 43: at 2,048 tokens Standard kept 312 recent tokens and Local 614. At every
    window Standard now keeps more recent text and protects more tool output than Local,
    with the model's window as trained length and as a measured size alike."""
    for trained, measured in ((window, None), (131_072, window)):
        loc = Settings(mode="local").effective_policy(trained, measured)
        std = Settings(mode="standard").effective_policy(trained, measured)
        assert std.keep_recent > loc.keep_recent, (window, loc, std)
        assert std.protect > loc.protect, (window, loc, std)
        assert std.reserve >= loc.reserve and std.summary_budget >= loc.summary_budget
        assert std.keep_recent >= min(20_000, int(std.window * STANDARD_KEEP_SHARE))
        for eff in (loc, std):
            assert eff.reserve + eff.keep_recent + eff.summary_budget <= eff.window


def test_standard_keep_recent_never_shrinks_as_the_window_grows() -> None:
    kept = [Settings(mode="standard").effective_policy(w).keep_recent
            for w in (*WINDOWS, 50_000, 65_536, 131_072, 262_144)]
    assert kept == sorted(kept) and kept[-1] == default_standard().keep_recent
    assert kept[1] == int(2_048 * STANDARD_KEEP_SHARE)  # 819, not 312


def test_effective_floors_for_a_tiny_model() -> None:
    eff = default_local().effective("local", 2_048)
    assert eff.reserve == MIN_RESERVE
    assert eff.summary_budget == max(MIN_SUMMARY_BUDGET, int(768 * 0.2048))
    assert eff.keep_recent >= MIN_KEEP_RECENT
    assert eff.reserve + eff.keep_recent + eff.summary_budget <= eff.window


def test_env_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSISTANT_DISABLE_PRUNE", raising=False)
    monkeypatch.delenv("ASSISTANT_DISABLE_AUTOCOMPACT", raising=False)
    sw = Settings().switches()
    assert sw.prune and sw.auto_compact and sw.compact_on_overflow
    monkeypatch.setenv("ASSISTANT_DISABLE_PRUNE", "1")
    monkeypatch.setenv("ASSISTANT_DISABLE_AUTOCOMPACT", "true")
    sw = Settings().switches()
    assert not sw.prune and not sw.auto_compact and not sw.compact_on_overflow
