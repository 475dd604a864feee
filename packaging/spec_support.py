"""Build-time helpers for ``assistant.spec``.

Kept out of the spec and free of PyInstaller imports so the fast tests in
``tests/packaging`` can exercise them without a build.

What lives here:

* finding and verifying the embedded model the app bundles (``models/<file>``), with a clear
  error when it has not been provisioned;
* working out which PySide6 bindings to leave out (everything but a small keep-list plus
  whatever the ``assistant`` package itself imports);
* deciding which collected Qt files are dead weight (plugins for excluded Qt modules,
  translations).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

#: Folder inside the bundle (``sys._MEIPASS``) that holds registry.json and the model.
BUNDLE_MODELS_DIR = "models"
#: Registry file name, both in the package (``assistant/llm/``) and in the bundle.
REGISTRY_NAME = "registry.json"
#: Set to a .gguf path to bundle that file instead of the provisioned one.
MODEL_OVERRIDE_ENV = "ASSISTANT_BUNDLE_MODEL"

#: PySide6 bindings always bundled. Others are excluded unless ``assistant`` imports them.
QT_KEEP = frozenset({"QtCore", "QtGui", "QtWidgets"})

#: Qt plugin folders that are never useful to this app (they pull in extra Qt libraries).
QT_PLUGIN_DIRS_DROPPED = frozenset(
    {
        "qmltooling",
        "sqldrivers",
        "designer",
        "multimedia",
        "position",
        "sensors",
        "texttospeech",
        "webview",
        "sceneparsers",
        "renderers",
        "geometryloaders",
        "assetimporters",
        "printsupport",
    }
)


class BundleError(Exception):
    """A problem that must stop the build, with a message meant for the person building."""


# --- the embedded model -------------------------------------------------------------------


def load_registry(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BundleError(f"model registry not found: {path}") from exc
    except json.JSONDecodeError as exc:
        raise BundleError(f"model registry {path} is not valid JSON: {exc}") from exc
    return data


def default_entry(registry: dict[str, Any]) -> dict[str, Any]:
    """The registry entry of the default (embedded) model."""
    name = registry.get("default")
    for entry in registry.get("models", []):
        if entry.get("name") == name:
            missing = [key for key in ("file", "sha256", "size") if key not in entry]
            if missing:
                raise BundleError(f"registry entry {name!r} lacks {', '.join(missing)}")
            return dict(entry)
    raise BundleError(f"registry default {name!r} is not among its models")


def _provisioned_candidates(entry: dict[str, Any]) -> list[Path]:
    """Where ``python -m assistant provision`` puts the model, most specific first."""
    candidates: list[Path] = []
    try:
        from assistant.llm.registry import default_model_path
    except ImportError:
        pass
    else:
        candidates.append(Path(default_model_path()))
    try:
        from assistant.paths import model_dir
    except ImportError:
        pass
    else:
        candidates.append(model_dir() / entry["file"])
    unique: list[Path] = []
    for path in candidates:
        if path not in unique:
            unique.append(path)
    return unique


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_model(path: Path, entry: dict[str, Any]) -> None:
    """Raise :class:`BundleError` unless ``path`` has the registry's size and sha256."""
    size = path.stat().st_size
    if size != entry["size"]:
        raise BundleError(
            f"{path} is {size:,} bytes but the registry says {entry['size']:,}: the file is "
            "incomplete or a different model. Re-provision it with `make model` "
            "(or `.venv/bin/python -m assistant provision`) and build again."
        )
    actual = sha256_of(path)
    if actual != entry["sha256"]:
        raise BundleError(
            f"{path} has sha256 {actual}, the registry expects {entry['sha256']}: the file is "
            "damaged. Re-provision it with `make model` (or `.venv/bin/python -m assistant "
            "provision`) and build again."
        )


def find_model(
    entry: dict[str, Any],
    override: str | None = None,
    candidates: Iterable[Path] | None = None,
) -> Path:
    """The verified model file to bundle as ``models/<file>``.

    ``override`` (normally ``$ASSISTANT_BUNDLE_MODEL``) wins; otherwise the provisioned
    locations are tried. Raises :class:`BundleError` with a how-to-fix message when the model
    is missing or does not match the registry.
    """
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise BundleError(f"{MODEL_OVERRIDE_ENV}={override} is not a file")
        verify_model(path, entry)
        return path
    tried = list(candidates) if candidates is not None else _provisioned_candidates(entry)
    for path in tried:
        if path.is_file():
            verify_model(path, entry)
            return path
    where = "\n".join(f"  - {p}" for p in tried) or "  (no model directory could be determined)"
    raise BundleError(
        f"the embedded model {entry['file']} is not provisioned, so it cannot be bundled.\n"
        f"Looked in:\n{where}\n"
        "Run `make model` (or `.venv/bin/python -m assistant provision`) and build again, or "
        f"set {MODEL_OVERRIDE_ENV}=/path/to/{entry['file']}."
    )


# --- PySide6 -----------------------------------------------------------------------------


def qt_modules_imported(source_dir: Path) -> set[str]:
    """Names of the PySide6 bindings (``QtSvg``...) imported anywhere under ``source_dir``."""
    found: set[str] = set()
    for file in sorted(source_dir.rglob("*.py")):
        try:
            tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        except (SyntaxError, UnicodeDecodeError):
            continue  # a half-written file; the build will report it properly
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "PySide6":
                    names = [f"PySide6.{alias.name}" for alias in node.names]
                else:
                    names = [node.module]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if len(parts) >= 2 and parts[0] == "PySide6" and parts[1].startswith("Qt"):
                    found.add(parts[1])
    return found


_BINDING = re.compile(r"^(Qt\w+)\.(?:abi3\.so|pyd|cpython-[^.]+\.so|so)$")


def qt_bindings_available(pyside_dir: Path) -> set[str]:
    """The PySide6 binding modules installed in ``pyside_dir``."""
    names = set()
    for item in pyside_dir.iterdir():
        match = _BINDING.match(item.name)
        if match:
            names.add(match.group(1))
    return names


def qt_keep(source_dir: Path) -> set[str]:
    return set(QT_KEEP) | qt_modules_imported(source_dir)


def qt_excludes(pyside_dir: Path, keep: Iterable[str]) -> list[str]:
    """``excludes`` entries for every installed PySide6 binding not in ``keep``."""
    return sorted(f"PySide6.{name}" for name in qt_bindings_available(pyside_dir) - set(keep))


def is_dropped_qt_file(dest: str, kept_modules: Iterable[str]) -> bool:
    """Whether a collected file (by its destination inside the bundle) is dead weight.

    Drops Qt translations (the UI is not translated), plugin folders listed in
    :data:`QT_PLUGIN_DIRS_DROPPED`, and shared libraries of Qt modules that nothing kept
    refers to by name (``libQt6Quick.so.6`` when QtQuick is excluded). Libraries the kept
    modules link against are found by PyInstaller's dependency analysis and stay, because they
    are only dropped here when they belong to a well-known heavy module (see below).
    """
    parts = PurePosixPath(dest.replace("\\", "/")).parts
    if len(parts) < 3 or parts[0] != "PySide6":
        return False
    if "translations" in parts:
        return True
    if "plugins" in parts:
        index = parts.index("plugins")
        if index + 1 < len(parts) and parts[index + 1] in QT_PLUGIN_DIRS_DROPPED:
            return True
    name = parts[-1]
    kept = set(kept_modules)
    for heavy in ("Qml", "Quick", "Pdf", "WebEngine", "Multimedia", "VirtualKeyboard", "Designer"):
        if f"Qt{heavy}" in kept:
            continue
        if re.match(rf"^(lib)?Qt6{heavy}\w*\.(so(\.\d+)*|dll|dylib)$", name):
            return True
    return False


# --- llama.cpp shared libraries -------------------------------------------------------------

_FULLY_VERSIONED = re.compile(r"^(lib[\w.+-]+?\.so)\.(\d+)\.\d+(?:\.\d+)*$")


def redundant_llama_libs(dests: Iterable[str]) -> set[str]:
    """Fully versioned copies in ``llama_cpp/lib`` (``libllama.so.0.5.0``) that nothing loads.

    llama-cpp-python's wheel holds three identical copies of each library (``libX.so``,
    ``libX.so.N``, ``libX.so.N.M.K``). ctypes opens ``libX.so`` and the dynamic linker follows
    the SONAME ``libX.so.N``; the third copy is only dropped when the other two are present.
    """
    normalized = {d.replace("\\", "/") for d in dests}
    redundant: set[str] = set()
    for dest in normalized:
        path = PurePosixPath(dest)
        if path.parent != PurePosixPath("llama_cpp/lib"):
            continue
        match = _FULLY_VERSIONED.match(path.name)
        if not match:
            continue
        plain, major = match.group(1), match.group(2)
        if {f"llama_cpp/lib/{plain}", f"llama_cpp/lib/{plain}.{major}"} <= normalized:
            redundant.add(dest)
    return redundant


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}
