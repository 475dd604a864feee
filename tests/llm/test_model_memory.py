"""Peak memory of loading any GGUF stays within 1.2x of what its trained window needs: the
trained length is read from the header before the context is created, so an unregistered
file asked for a 131,072-token window (standard mode) never gets one (issue 18, item 6)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def _load(model: str, n_ctx: int) -> tuple[int, int, int]:
    """(window, trained context, peak RSS in KB) of loading ``model`` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, model, str(n_ctx)],
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
