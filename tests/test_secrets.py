"""API keys stay out of the settings file: the keyring when there is one, else a private
file; a relocated app (ASSISTANT_HOME, as in every test) never touches the real keyring."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from keyring.backend import KeyringBackend

from assistant import paths
from assistant.config import Settings, save_settings
from assistant.secrets import FILE_NAME, SERVICE, SecretStore, SecretStoreError


class MemoryKeyring(KeyringBackend):
    """A keyring backend that keeps passwords in a dict (a stand-in for the OS keyring)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


URL = "http://10.0.0.5:8080"


def test_without_a_keyring_the_key_goes_to_a_private_file() -> None:
    store = SecretStore()
    assert "readable only by you" in store.where
    store.set(URL, "sk-secret-1")
    path = paths.config_dir() / FILE_NAME
    assert json.loads(path.read_text(encoding="utf-8")) == {URL: "sk-secret-1"}
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert SecretStore().get(URL) == "sk-secret-1"
    assert SecretStore().get("http://other:1") is None


def test_the_settings_file_never_holds_the_key() -> None:
    settings = Settings()
    settings.engine.server.base_url = URL
    settings.engine.kind = "server"
    SecretStore().set(URL, "sk-do-not-leak")
    save_settings(settings)
    text = paths.settings_file().read_text(encoding="utf-8")
    assert URL in text
    assert "sk-do-not-leak" not in text


def test_an_empty_key_deletes_it() -> None:
    store = SecretStore()
    store.set(URL, "k")
    store.set(URL, "")
    assert store.get(URL) is None
    assert json.loads((paths.config_dir() / FILE_NAME).read_text(encoding="utf-8")) == {}


def test_a_file_readable_by_others_is_made_private(caplog: pytest.LogCaptureFixture) -> None:
    if os.name != "posix":
        pytest.skip("file modes are POSIX")
    store = SecretStore()
    store.set(URL, "k")
    path = paths.config_dir() / FILE_NAME
    path.chmod(0o644)
    assert store.get(URL) == "k"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "readable by others" in caplog.text


def test_a_damaged_file_is_a_clear_error() -> None:
    path = paths.config_dir() / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("not json", encoding="utf-8")
    path.chmod(0o600)
    with pytest.raises(SecretStoreError, match="Cannot read"):
        SecretStore().get(URL)


def test_with_a_keyring_the_key_goes_there_not_to_the_file(tmp_path: Path) -> None:
    ring = MemoryKeyring()
    file = tmp_path / "secrets.json"
    store = SecretStore(ring, file)
    assert "keyring" in store.where
    store.set(URL, "sk-in-keyring")
    assert ring.items == {(SERVICE, URL): "sk-in-keyring"}
    assert not file.exists()
    assert store.get(URL) == "sk-in-keyring"
    store.delete(URL)
    assert ring.items == {}
    assert store.get(URL) is None


def test_a_key_left_in_the_file_moves_to_the_keyring(tmp_path: Path) -> None:
    file = tmp_path / "secrets.json"
    SecretStore(file=file).set(URL, "old")
    ring = MemoryKeyring()
    store = SecretStore(ring, file)
    assert store.get(URL) == "old"  # still found
    store.set(URL, "new")
    assert ring.items[(SERVICE, URL)] == "new"
    assert json.loads(file.read_text(encoding="utf-8")) == {}


def test_relocated_app_does_not_use_the_system_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring

    ring = MemoryKeyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(ring)
    try:
        store = SecretStore()  # ASSISTANT_HOME is set by the autouse fixture
        store.set(URL, "k")
        assert ring.items == {}
        monkeypatch.delenv("ASSISTANT_HOME")
        assert "keyring" in SecretStore().where
    finally:
        keyring.set_keyring(previous)
