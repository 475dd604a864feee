"""Peak memory of loading any GGUF stays within 1.2x of what its trained window needs: the
trained length is read from the header before the context is created, so an unregistered
file asked for a 131,072-token window (standard mode) never gets one (issue 18, item 6).

A header that lies (issue 28, item 3): the embedded model with its trained context patched
to 10^9 is refused before llama.cpp sees it; patched to 10^6 (a claim a model could make)
it gets the window its weights back, and loading it takes what that window needs."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.llm.gguf import read_header
from assistant.llm.registry import load_registry, model_path

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
STANDARD_WINDOW = 131_072

_LOAD = """
import resource, sys
from assistant.llm.llama_backend import LlamaBackend
backend = LlamaBackend.load(sys.argv[1], n_ctx=int(sys.argv[2]), threads=1)
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(backend.info.context_window, backend.info.trained_context, peak_kb)
"""


#: llama.cpp itself with a given window, for what that window needs.
_REFERENCE = """
import resource, sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=int(sys.argv[2]), n_threads=1, verbose=False)
print(llm.n_ctx(), 0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

_REFUSED = """
import resource, sys
from assistant.llm.base import ModelLoadError
from assistant.llm.llama_backend import LlamaBackend
try:
    LlamaBackend.load(sys.argv[1], n_ctx=int(sys.argv[2]), threads=1)
except ModelLoadError as exc:
    print(str(exc), file=sys.stderr)
    print(0, 0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _load(model: str, n_ctx: int, script: str = _LOAD) -> tuple[int, int, int]:
    """(window, trained context, peak RSS in KB) of loading ``model`` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", script, model, str(n_ctx)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
        check=True,
    )
    window, trained, peak = (int(x) for x in done.stdout.split())
    return window, trained, peak


def _present_models() -> list[tuple[str, Path, int]]:
    return [
        (e.name, model_path(e), e.context_length)
        for e in load_registry().models
        if model_path(e).is_file()
    ]


@pytest.mark.parametrize("model", _present_models(), ids=lambda m: m[0])
def test_unregistered_copy_in_standard_mode_stays_within_its_trained_window(
    model: tuple[str, Path, int], tmp_path: Path
) -> None:
    name, path, trained = model
    reference = _load(name, trained)
    # The same file under a name the registry does not know, asked for the standard window.
    alias = tmp_path / "my-downloaded-model.gguf"
    alias.symlink_to(path)
    window, header_trained, peak = _load(str(alias), STANDARD_WINDOW)
    assert (window, header_trained) == (trained, trained)
    assert reference[0] == trained
    ratio = peak / reference[2]
    print(f"{name}: peak {peak / 1024:.0f} MB vs {reference[2] / 1024:.0f} MB, x{ratio:.2f}")
    assert ratio <= 1.2


def _patched(source: Path, target: Path, context: int) -> Path:
    """A copy of ``source`` whose header claims a trained context of ``context``."""
    data = bytearray(source.read_bytes())
    arch = read_header(source).architecture
    key = f"{arch}.context_length".encode()
    at = data.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
    assert struct.unpack_from("<I", data, at)[0] == 4  # a uint32 value follows
    struct.pack_into("<I", data, at + 4, context)
    target.write_bytes(bytes(data))
    return target


def _embedded() -> tuple[str, Path, int]:
    present = _present_models()
    assert present, "the embedded model is always provisioned for the tests"
    return present[0]


def test_a_header_claiming_a_billion_token_context_is_refused_before_loading(
    tmp_path: Path,
) -> None:
    name, path, trained = _embedded()
    hostile = _patched(path, tmp_path / "hostile.gguf", 10**9)
    for window in (10_000, STANDARD_WINDOW):  # local and standard mode
        _, _, peak = _load(str(hostile), window, _REFUSED)
        reference = _load(name, trained)[2]
        print(f"refused: peak {peak / 1024:.0f} MB vs {reference / 1024:.0f} MB loaded")
        assert peak <= 1.2 * reference


def test_a_plausible_lie_gets_the_window_the_weights_back(tmp_path: Path) -> None:
    _, path, trained = _embedded()
    liar = _patched(path, tmp_path / "liar.gguf", 10**6)
    cap = read_header(liar).context_cap
    assert cap is not None and trained < cap < 10**6
    window, reported, peak = _load(str(liar), STANDARD_WINDOW)
    assert reported == cap  # what the app plans with: never the claim
    assert cap <= window < cap + 256  # llama.cpp rounds the window up to 256
    need = _load(str(path), window, _REFERENCE)[2]  # llama.cpp alone, the same window
    print(f"capped at {window:,}: peak {peak / 1024:.0f} MB vs {need / 1024:.0f} MB needed")
    assert peak <= 1.2 * need
