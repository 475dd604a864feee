"""``python -m assistant probe``: runs the probe on the chosen model and keeps the result."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from assistant.__main__ import USAGE
from assistant.cli import probe
from assistant.llm.base import ModelLoadError
from assistant.llm.context_probe import EffectiveContextStore, measured_context
from tests.fakes.scripted import ScriptedBackend


def _answers(backend: ScriptedBackend) -> Any:
    def reply(messages: list[dict[str, Any]]) -> str:
        text = messages[-1]["content"]
        door = re.findall(r"for the (\w+) door\?", text)[0]
        code = re.findall(rf"the {door} door is (\d+)\.", text)[0]
        return code if backend.count_prompt(messages) < 1500 else "no idea"

    return reply


def test_probe_command_measures_and_keeps_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = ScriptedBackend(window=4_096)
    for _ in range(18):
        backend.enqueue(_answers(backend))
    loads: list[tuple[str, int]] = []

    def load(model: str, *, n_ctx: int, threads: int) -> ScriptedBackend:
        loads.append((model, n_ctx))
        return backend

    monkeypatch.setattr("assistant.llm.llama_backend.LlamaBackend.load", load)
    out = io.StringIO()
    assert probe.main(["smollm2-135m-instruct"], out=out) == 0
    assert loads == [("smollm2-135m-instruct", 8_192)]  # the window the app would use
    text = out.getvalue()
    assert "size 1,024 depth 0.9: right" in text and "size 2,048 depth 0.1: wrong" in text
    assert (
        "effective context about 1,024 tokens (accuracy 6/6 at 1,024, 0/6 at 2,048, "
        "0/6 at 4,096)"
    ) in text
    assert measured_context(backend.info, EffectiveContextStore()) == 1_024
    assert backend.closed
    assert "probe [MODEL]" in USAGE


def test_a_model_that_does_not_load_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(model: str, **_kw: Any) -> ScriptedBackend:
        raise ModelLoadError(model, "the file may be damaged")

    monkeypatch.setattr("assistant.llm.llama_backend.LlamaBackend.load", load)
    out = io.StringIO()
    assert probe.main(["nowhere.gguf"], out=out) == 1
    assert out.getvalue().startswith("error: ") and "damaged" in out.getvalue()
    assert not EffectiveContextStore().path.exists()


def test_bad_sizes_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        probe.main(["--sizes", "1k"])
    assert "sizes are whole numbers" in capsys.readouterr().err
