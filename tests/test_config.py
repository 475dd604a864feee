"""Settings: validation naming the field, the effective-policy rule, persistence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from assistant.config import ModePolicy, Settings, default_local, load_settings, save_settings


def test_defaults_match_the_design_card() -> None:
    s = Settings()
    assert s.mode == "local"
    loc, std = s.local, s.standard
    assert (
        loc.window,
        loc.protect,
        loc.minimum,
        loc.reserve,
        loc.keep_recent,
        loc.summary_budget,
    ) == (10_000, 2_000, 500, 1_024, 3_000, 768)
    assert (std.protect, std.minimum, std.reserve, std.keep_recent, std.summary_budget) == (
        40_000,
        20_000,
        16_384,
        20_000,
        13_107,
    )


@pytest.mark.parametrize("field", ["protect", "minimum", "reserve", "keep_recent"])
def test_negative_values_are_refused_naming_the_field(field: str) -> None:
    values = default_local().model_dump() | {field: -1}
    with pytest.raises(ValidationError) as info:
        ModePolicy(**values)
    assert field in str(info.value)


def test_values_that_do_not_fit_the_window_are_refused() -> None:
    with pytest.raises(ValidationError, match="must fit in the Context window"):
        ModePolicy(
            window=4_000, protect=0, minimum=0, reserve=2_000, keep_recent=1_500, summary_budget=501
        )
    ok = ModePolicy(
        window=4_000, protect=0, minimum=0, reserve=2_000, keep_recent=1_500, summary_budget=500
    )
    assert ok.window == 4_000
    p = default_local()
    with pytest.raises(ValidationError):
        p.reserve = 9_000  # validate_assignment


def test_effective_policy_rule() -> None:
    s = Settings()
    same = s.effective_policy(32_768)
    assert same.window == 10_000 and not same.scaled and same.reserve == 1_024
    small = s.effective_policy(8_192)
    f = 8_192 / 10_000
    assert small.scaled and small.window == 8_192
    assert small.protect == int(2_000 * f) and small.keep_recent == int(3_000 * f)
    assert small.reserve + small.keep_recent + small.summary_budget <= small.window
    tiny = s.effective_policy(1_000)
    assert tiny.reserve == 256 and tiny.summary_budget == 128  # floors
    std = Settings(mode="standard").effective_policy(8_192)
    assert std.window == 8_192 and std.reserve == 1_024
    assert "scaled" in std.describe()


def test_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings()
    assert s.switches().prune and s.switches().auto_compact
    monkeypatch.setenv("ASSISTANT_DISABLE_PRUNE", "1")
    monkeypatch.setenv("ASSISTANT_DISABLE_AUTOCOMPACT", "true")
    sw = s.switches()
    assert not sw.prune and not sw.auto_compact and not sw.compact_on_overflow
    assert s.compaction.prune  # the stored setting is unchanged


def test_round_trip_and_corrupt_file_is_backed_up(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    s = Settings(mode="standard", theme="dark")
    save_settings(s, path)
    assert load_settings(path).settings == s
    path.write_text("{not json")
    loaded = load_settings(path)
    assert loaded.settings == Settings()
    assert loaded.notice and "defaults are in use" in loaded.notice
    backups = list(tmp_path.glob("settings.json.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_text() == "{not json"


def test_newer_schema_and_invalid_values_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"schema_version": 99}))
    assert "newer" in (load_settings(path).notice or "")
    path.write_text(json.dumps({"local": {"window": -5}}))
    loaded = load_settings(path)
    assert loaded.notice and loaded.settings.local.window == 10_000


@pytest.mark.parametrize("trained", [64, 300, 639, 640, 700, 2_048, 8_192, 9_999])
@pytest.mark.parametrize("mode", ["local", "standard"])
def test_effective_values_always_fit_the_window(trained: int, mode: str) -> None:
    eff = Settings(mode=mode).effective_policy(trained)  # type: ignore[arg-type]
    assert eff.window == trained
    assert eff.reserve + eff.keep_recent + eff.summary_budget <= eff.window
    assert eff.summary_budget >= 1 and eff.reserve > 0
