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


def _under_home(name: str, default: str | Path) -> Path:
    home = _home()
    return home / name if home else Path(default)


def _from_env(variable: str, default: Path) -> Path:
    value = os.environ.get(variable)
    return Path(value).expanduser() if value else default


def config_dir() -> Path:
    return _under_home("config", platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    return _under_home("data", platformdirs.user_data_dir(APP_NAME))


def cache_dir() -> Path:
    return _under_home("cache", platformdirs.user_cache_dir(APP_NAME))


def model_dir() -> Path:
    return _from_env("ASSISTANT_MODEL_DIR", Path(platformdirs.user_data_dir(APP_NAME)) / "models")


def wheel_dir() -> Path:
    """Where provisioned model wheels are kept (``ASSISTANT_WHEEL_DIR`` moves it)."""
    return _from_env("ASSISTANT_WHEEL_DIR", cache_dir() / "wheels")


def sessions_dir() -> Path:
    return data_dir() / "sessions"


def default_workspace() -> Path:
    """A dedicated folder in the user's documents directory, never the whole home."""
    return _under_home("workspace", Path(platformdirs.user_documents_dir()) / "Offline Assistant")


def documents_dir() -> Path:
    """The user's documents folder (where exports are offered to go)."""
    return _under_home("Documents", platformdirs.user_documents_dir())


def settings_file() -> Path:
    return config_dir() / "settings.json"
