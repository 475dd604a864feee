"""API keys for servers, kept out of the settings file: in the system keyring, else a file
only the user can read (docs/ARCHITECTURE.md, "Tool safety beyond paths")."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

from assistant import paths
from assistant.atomicfile import make_dirs, write_atomically

log = logging.getLogger(__name__)

SERVICE = "offline-assistant"
FILE_NAME = "secrets.json"


class SecretStoreError(Exception):
    """A key could not be stored or read (the message says where and why)."""


def _system_keyring() -> Any | None:
    """The platform's keyring backend, or None when there is no real one."""
    if os.environ.get("ASSISTANT_HOME"):
        return None
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:  # pragma: no cover - keyring is a dependency
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken keyring configuration: use the file
        log.warning("the system keyring could not be set up", exc_info=True)
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 0) <= 0:
        return None
    return backend


class SecretStore:
    def __init__(self, keyring_backend: Any | None = None, file: Path | None = None) -> None:
        """Default: the system's keyring, and ``secrets.json`` in the config folder."""
        self._keyring = keyring_backend if keyring_backend is not None else _system_keyring()
        self._file = file or paths.config_dir() / FILE_NAME

    @property
    def where(self) -> str:
        if self._keyring is not None:
            name = getattr(self._keyring, "name", type(self._keyring).__name__)
            return f"the system keyring ({name})"
        return f"{self._file} (readable only by you)"

    # -- public --------------------------------------------------------------------------
    def get(self, address: str) -> str | None:
        if not address:
            return None
        if self._keyring is not None:
            try:
                value = self._keyring.get_password(SERVICE, address)
            except Exception as exc:
                raise SecretStoreError(f"Cannot read the key from {self.where}: {exc}") from exc
            if value:
                return str(value)
        return self._read_file().get(address) or None

    def set(self, address: str, secret: str) -> None:
        """Store ``secret`` for ``address`` (an empty secret deletes the key)."""
        if not address:
            raise SecretStoreError("A key needs the server's address.")
        if not secret:
            self.delete(address)
            return
        if self._keyring is not None:
            try:
                self._keyring.set_password(SERVICE, address, secret)
            except Exception as exc:
                raise SecretStoreError(f"Cannot store the key in {self.where}: {exc}") from exc
            self._remove_from_file(address)  # an older copy in the file is not needed
            return
        data = self._read_file()
        data[address] = secret
        self._write_file(data)

    def delete(self, address: str) -> None:
        if self._keyring is not None:
            with contextlib.suppress(Exception):  # nothing stored is fine
                self._keyring.delete_password(SERVICE, address)
        self._remove_from_file(address)

    # -- the file ------------------------------------------------------------------------
    def _read_file(self) -> dict[str, str]:
        path = self._file
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise SecretStoreError(f"Cannot read {path}: {exc}") from exc
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("%s was readable by others; making it private (0600)", path)
            try:
                path.chmod(0o600)
            except OSError as exc:
                raise SecretStoreError(f"{path} is readable by others: {exc}") from exc
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise SecretStoreError(f"Cannot read {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise SecretStoreError(f"{path} does not hold a JSON object")
        return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}

    def _write_file(self, data: dict[str, str]) -> None:
        path = self._file
        try:
            make_dirs(path.parent)
            # created 0600, data fsynced, renamed, folder fsynced
            write_atomically(path, json.dumps(data, indent=1), mode=0o600)
        except OSError as exc:
            raise SecretStoreError(f"Cannot write {path}: {exc}") from exc

    def _remove_from_file(self, address: str) -> None:
        data = self._read_file()
        if address in data:
            del data[address]
            self._write_file(data)
