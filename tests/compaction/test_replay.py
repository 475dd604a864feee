"""The replay tool: JSON lines per model call, final context, errors naming the line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assistant.replay import main

from .helpers import CONSTRAINTS, PLANTED_PATHS, session_transcript


def _write(tmp_path: Path, messages: list[dict[str, Any]]) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n", encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, list[dict[str, Any]]]:
    code = main(argv)
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines() if line.strip()]


def test_one_line_per_model_call_and_a_final_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = session_transcript(turns=3, lines=10)
    code, lines = _run(capsys, [str(_write(tmp_path, messages)), "--json"])
    assert code == 0
    calls, final = lines[:-1], lines[-1]
    assert len(calls) == sum(1 for m in messages if m["role"] == "assistant") == 6
    assert [c["call"] for c in calls] == list(range(1, 7))
    assert set(calls[0]) == {"call", "prompt_tokens", "window", "pruned_tokens", "compaction",
                             "overflow"}
    assert all(c["window"] == 10_000 and c["overflow"] is False for c in calls)
    assert calls[0]["prompt_tokens"] < calls[-1]["prompt_tokens"]
    assert set(final) == {"final_context", "summary", "files_read", "files_modified"}
    assert final["files_read"] == PLANTED_PATHS
    assert final["final_context"][0] == {"role": "system", "content": messages[0]["content"]}


def test_small_window_compacts_and_keeps_what_was_planted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, session_transcript(turns=30, lines=120))
    code, lines = _run(capsys, [str(path), "--window", "4000", "--json"])
    assert code == 0
    calls, final = lines[:-1], lines[-1]
    compactions = [c["compaction"] for c in calls if c["compaction"]]
    assert compactions and all(c["reason"] == "threshold" for c in compactions)
    assert all(c["tokens_after"] < c["tokens_before"] for c in compactions)
    assert any(c["pruned_tokens"] > 0 for c in calls)
    window = calls[0]["window"]
    assert window == 4_000
    assert all(c["prompt_tokens"] < window and not c["overflow"] for c in calls)
    context = json.dumps(final["final_context"])
    for text in CONSTRAINTS + PLANTED_PATHS:
        assert text in context
    assert final["summary"] and final["files_read"][:3] == PLANTED_PATHS


def test_standard_mode_and_text_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, session_transcript(turns=2, lines=10))
    assert main([str(path), "--mode", "standard"]) == 0
    out = capsys.readouterr().out
    assert "call   1:" in out and "/ 131072 tokens" in out and "files read:" in out


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "invalid JSON"),
        ('{"role": "wizard", "content": "x"}', "unknown role"),
        ('{"role": "tool", "content": "x"}', "tool_call_id"),
        ("[1, 2]", "not a valid message"),
    ],
)
def test_malformed_line_is_named_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, reason: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n\n' + line + "\n", encoding="utf-8")
    assert main([str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3:" in err and reason in err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_runs_as_a_module(tmp_path: Path) -> None:
    path = _write(tmp_path, session_transcript(turns=1, lines=4))
    proc = subprocess.run(
        [sys.executable, "-m", "assistant.replay", str(path), "--json"],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["files_read"] == [PLANTED_PATHS[0]]
