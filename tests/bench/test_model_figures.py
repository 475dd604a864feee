"""The per-model figures (bench/model_figures.py): one model measured for real on small
sizes, a model that cannot load kept as its error, and the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import model_figures


def test_the_paste_is_about_the_size_asked() -> None:
    count = lambda text: len(text.split())  # noqa: E731 - a word counter stands in
    text = model_figures.paste_text(count, 300)
    assert 280 <= count(text) <= 300


@pytest.mark.integration
def test_one_models_figures(embedded_model_path: Path) -> None:
    got = model_figures.measure(str(embedded_model_path), paste=200, history=400, reply=8,
                                typing_s=30)
    assert got["paste_prompt_tokens"] >= 200
    assert got["resume_history_tokens"] >= 200
    assert got["decode_tokens"] >= 2 and got["decode_tps"] > 0
    assert got["short_ttft_s"] > 0 and got["paste_ttft_s"] > 0
    assert got["resume_ttft_s"] > 0 and got["live_ttft_s"] > 0
    assert got["peak_rss_mb"] > 50  # the model's weights were resident
    # Typing under the paste read it ahead: the send evaluated only what followed it.
    assert got["ahead_read_tokens"] >= 200
    assert got["ahead_evaluated"] < got["paste_evaluated"] - 150
    # Raw llama.cpp timed on the same new tokens of the follow-up, for the ratio.
    assert got["live_evaluated"] > 0 and got["raw_new_s"] > 0
    table = model_figures.render([got, {"model": "x", "error": "exit 1: no file"}], "cmd")
    assert f"| {got['model']} | {got['short_ttft_s']} |" in table
    assert "read ahead" in table and "x sooner" in table
    assert f"app {got['live_ttft_s'] / got['raw_new_s']:.2f}x" in table
    assert "| x | exit 1: no file |" in table


def test_a_model_that_cannot_load_is_kept_as_its_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"
    rows = model_figures.run_all([str(missing)], paste=100, history=100)
    assert rows[0]["model"] == str(missing) and "does not exist" in rows[0]["error"]
