"""Settings live apart from chats; a corrupt settings file is backed up and defaults used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant import paths
from assistant.config import (
    SETTINGS_SCHEMA_VERSION,
    Settings,
    default_local,
    load_settings,
    save_settings,
)


def test_missing_file_gives_defaults_without_notice() -> None:
    loaded = load_settings()
    assert loaded.settings == Settings() and loaded.notice is None


def test_save_load_round_trip_apart_from_chats() -> None:
    settings = Settings(mode="standard", theme="dark")
    save_settings(settings)
    path = paths.settings_file()
    assert path.exists() and not path.with_name(path.name + ".tmp").exists()
    assert paths.sessions_dir() not in path.parents
    assert json.loads(path.read_text())["schema_version"] == SETTINGS_SCHEMA_VERSION
    loaded = load_settings()
    assert loaded.settings == settings and loaded.notice is None


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{not json", "Expecting property name"),
        (b"[1, 2]", "does not hold a JSON object"),
        (b'{"mode": "turbo"}', "mode: Input should be 'local' or 'standard'"),
        (b'{"schema_version": 999}', "newer than this app"),
        (b"\xff\xfe\x00garbage", "codec can't decode"),
        (b'{"local": ' + b"[" * 2000 + b"]" * 2000 + b"}", "nested more than 64 levels"),
        (b'{"x": ' + b"{" * 500 + b"}" * 500 + b"}", "nested more than 64 levels"),
        (
            json.dumps({"local": {**default_local().model_dump(), "w" * 1900: 1}}).encode(),
            "Local mode › " + "w" * 39 + "…: Extra inputs are not permitted",
        ),
        (b'{"local": {"window": 1000000000000}}', "Local mode › Context window: Input"),
        (b'{"sampling": {"top_p": 7}}', "Top p: Input should be less than or equal to 1"),
    ],
)
def test_corrupt_file_is_backed_up_and_defaults_used(content: bytes, reason: str) -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    loaded = load_settings()
    assert loaded.settings == Settings()
    assert loaded.notice is not None
    assert reason in loaded.notice and "defaults are in use" in loaded.notice
    backups = list(path.parent.glob("settings.json.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == content
    assert str(backups[0]) in loaded.notice
    # saving afterwards replaces the corrupt file with a good one
    save_settings(loaded.settings)
    assert load_settings().notice is None


def test_explicit_path(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    save_settings(Settings(step_limit=3), target)
    assert load_settings(target).settings.step_limit == 3


def test_a_failed_backup_reads_as_a_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"{not json")

    def no_copy(*_a: object, **_k: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("assistant.config.shutil.copy2", no_copy)
    notice = load_settings().notice
    assert notice is not None
    assert "; it could not be backed up (Permission denied), and defaults are in use." in notice
    assert "it was could not" not in notice
