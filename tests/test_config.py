"""Settings: validation naming the field, the effective-policy rule, persistence."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from assistant.config import (
    MODE_NAMES,
    SETTING_LABELS,
    Mode,
    ModePolicy,
    Settings,
    default_local,
    load_settings,
    save_settings,
)


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


def test_earlier_turns_as_notes_is_on_and_the_environment_switches_it_either_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = Settings()
    assert s.switches().earlier_as_notes
    monkeypatch.setenv("ASSISTANT_EARLIER_AS_NOTES", "0")
    assert not s.switches().earlier_as_notes and s.compaction.earlier_as_notes
    s.compaction.earlier_as_notes = False
    monkeypatch.setenv("ASSISTANT_EARLIER_AS_NOTES", "1")
    assert s.switches().earlier_as_notes
    monkeypatch.delenv("ASSISTANT_EARLIER_AS_NOTES")
    assert not s.switches().earlier_as_notes


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


# -- the engine setting (issue 16) ------------------------------------------------------------


def test_the_engine_is_embedded_by_default_with_no_address() -> None:
    s = Settings()
    assert s.engine.kind == "embedded"
    assert s.engine.server.base_url == ""


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("  http://127.0.0.1:8080/  ", "http://127.0.0.1:8080"),
        ("http://gpu-box:11434/v1", "http://gpu-box:11434"),
        ("https://llm.home.arpa/api/v1/", "https://llm.home.arpa/api"),
        ("", ""),
    ],
)
def test_server_addresses_are_normalized(typed: str, stored: str) -> None:
    s = Settings()
    s.engine.server.base_url = typed
    assert s.engine.server.base_url == stored


@pytest.mark.parametrize(
    ("typed", "reason"),
    [
        ("127.0.0.1:8080", "http://"),
        ("ftp://host", "http://"),
        ("http://", "host"),
        ("http://host:99999", "port"),
        ("http://host:8080/v1?key=1", "query"),
    ],
)
def test_bad_server_addresses_are_refused_with_a_reason(typed: str, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        Settings.model_validate({"engine": {"server": {"base_url": typed}}})
    assert reason in str(info.value)
    assert "base_url" in str(info.value)


def test_a_server_engine_needs_an_address() -> None:
    with pytest.raises(ValidationError, match="needs the server's address"):
        Settings.model_validate({"engine": {"kind": "server"}})


def test_engine_settings_round_trip(tmp_path: Path) -> None:
    s = Settings()
    s.engine = s.engine.model_validate(
        {"kind": "server", "server": {"base_url": "http://h:1/v1", "model": "m", "window": 4096,
                                      "tool_calls": "text", "timeout_s": 30}}
    )
    path = tmp_path / "settings.json"
    save_settings(s, path)
    loaded = load_settings(path)
    assert loaded.notice is None
    assert loaded.settings.engine == s.engine
    assert loaded.settings.engine.server.base_url == "http://h:1"


# -- the measured target and the hard window (issue 25/26) ------------------------------


def test_a_measured_context_is_the_target_and_the_window_the_hard_limit() -> None:
    settings = Settings()
    pol = settings.effective_policy(8_192, 2_048)
    # Every value is scaled from the target, as for a 2,048-token window...
    assert replace(pol, hard_window=0) == default_local().effective("local", 2_048)
    # ...and the model's window stays the hard limit.
    assert (pol.window, pol.hard_window, pol.limit) == (2_048, 8_192, 8_192)
    text = pol.describe()
    assert "prompts kept within 2,048 of the 8,192 window" in text
    assert "a long latest message may use the whole window" in text
    # Without a measurement (or with the switch off) the window is both.
    plain = settings.effective_policy(8_192)
    assert (plain.window, plain.limit) == (8_192, 8_192) and "window 8,192" in plain.describe()
    settings.compaction.use_measured_context = False
    assert settings.effective_policy(8_192, 2_048).limit == 8_192
    assert settings.effective_policy(8_192, 2_048).window == 8_192


def test_the_latest_turn_grows_the_call_window_up_to_the_hard_limit_only() -> None:
    pol = Settings().effective_policy(8_192, 2_048)
    beside = 200  # system prompt, tools, the smallest summary
    # A turn that fits in the target beside the rest: the target is the window.
    assert pol.for_turn(1_000, beside).window == 2_048
    # A larger one gets exactly what it needs: the history beside it is the smallest.
    assert pol.for_turn(4_000, beside).window == 4_000 + beside + pol.reserve
    # Never beyond the hard limit; the hard limit itself never moves.
    big = pol.for_turn(9_000, beside)
    assert big.window == 8_192 and big.limit == 8_192
    assert pol.for_turn(4_000, beside).protect == pol.protect  # history values unchanged



def test_the_first_run_uses_the_registry_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 45: a new user's window starts with the registry's default model (the suite
    pins the small one for speed: tests/conftest.py; here the product's own is put back)."""
    import assistant.config as config
    from assistant.llm.registry import load_registry
    from tests.conftest import PRODUCT_DEFAULT_MODEL

    registry = load_registry()
    assert registry.default == PRODUCT_DEFAULT_MODEL
    monkeypatch.setattr(config, "DEFAULT_MODEL", PRODUCT_DEFAULT_MODEL)
    assert Settings().model == registry.default
    assert registry.small == "smollm2-135m-instruct" and registry.get(registry.small)


def test_one_list_of_modes_feeds_settings_labels_and_both_command_lines() -> None:
    """Issue 42: the mode names are spelled once (``Mode``); argparse, the labels and
    ``/mode``'s usage read them."""
    from assistant.agent.commands import COMMANDS
    from assistant.cli.chat import _parser as chat_parser
    from assistant.replay import build_parser as replay_parser

    assert MODE_NAMES == ("local", "standard")
    assert [SETTING_LABELS[name] for name in MODE_NAMES] == ["Local mode", "Standard mode"]
    for parser in (chat_parser(), replay_parser()):
        action = next(a for a in parser._actions if a.dest == "mode")
        assert [str(choice) for choice in action.choices or ()] == list(MODE_NAMES)
    args = replay_parser().parse_args(["chat.jsonl", "--mode", "standard"])
    assert Settings(mode=args.mode).mode is Mode.STANDARD
    assert replay_parser().parse_args(["chat.jsonl"]).mode == Mode.LOCAL
    with pytest.raises(SystemExit):
        chat_parser().parse_args(["--mode", "huge"])
    mode_spec = next(c for c in COMMANDS if c.command == "/mode")
    assert mode_spec.arguments == "[local|standard]"


@pytest.mark.parametrize("name", ["local", "standard"])
def test_settings_files_with_the_mode_names_load_and_save_unchanged(
    tmp_path: Path, name: str
) -> None:
    """A settings file written before the enum (the mode a plain string) loads, and is
    written back with the same string."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"schema_version": 1, "mode": name}), encoding="utf-8")
    loaded = load_settings(path)
    assert loaded.notice is None
    assert loaded.settings.mode == name and loaded.settings.mode is Mode(name)
    save_settings(loaded.settings, path)
    assert json.loads(path.read_text(encoding="utf-8"))["mode"] == name
    assert f'"mode": "{name}"' in path.read_text(encoding="utf-8")


def test_an_unknown_mode_in_a_settings_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"mode": "huge"}), encoding="utf-8")
    loaded = load_settings(path)
    assert loaded.notice is not None and "'local' or 'standard'" in loaded.notice
    assert loaded.settings.mode is Mode.LOCAL


def test_a_copy_given_the_plain_mode_name_saves_it(tmp_path: Path) -> None:
    """``model_copy(update=...)`` does not validate: a face (or the dialog's preview) that
    hands the plain name gets it saved as before, without a serializer warning."""
    path = tmp_path / "settings.json"
    copy = Settings().model_copy(update={"mode": "standard"})
    save_settings(copy, path)
    assert json.loads(path.read_text(encoding="utf-8"))["mode"] == "standard"
    assert load_settings(path).settings.mode is Mode.STANDARD
    assert copy.policy() == copy.standard
