"""Where the assistant keeps its files: the platformdirs locations, all under
``ASSISTANT_HOME`` when set (tests), the models under ``ASSISTANT_MODEL_DIR`` and their
wheels under ``ASSISTANT_WHEEL_DIR``."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "offline-assistant"


def _home() -> Path | None:
    value = os.environ.get("ASSISTANT_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    home = _home()
    return home / "config" if home else Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    home = _home()
    return home / "data" if home else Path(platformdirs.user_data_dir(APP_NAME))


def cache_dir() -> Path:
    home = _home()
    return home / "cache" if home else Path(platformdirs.user_cache_dir(APP_NAME))


def model_dir() -> Path:
    value = os.environ.get("ASSISTANT_MODEL_DIR")
    if value:
        return Path(value).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME)) / "models"


def wheel_dir() -> Path:
    """Where provisioned model wheels are kept (``ASSISTANT_WHEEL_DIR`` moves it)."""
    value = os.environ.get("ASSISTANT_WHEEL_DIR")
    if value:
        return Path(value).expanduser()
    return cache_dir() / "wheels"


def sessions_dir() -> Path:
    return data_dir() / "sessions"


def default_workspace() -> Path:
    """A dedicated folder in the user's documents directory, never the whole home."""
    home = _home()
    if home:
        return home / "workspace"
    return Path(platformdirs.user_documents_dir()) / "Offline Assistant"


def documents_dir() -> Path:
    """The user's documents folder (where exports are offered to go)."""
    home = _home()
    if home:
        return home / "Documents"
    return Path(platformdirs.user_documents_dir())


def settings_file() -> Path:
    return config_dir() / "settings.json"
