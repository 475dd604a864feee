"""The replay tool: JSON lines per model call, final context, errors naming the line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assistant.replay import main

from .helpers import CONSTRAINTS, PLANTED_PATHS, session_transcript, shown_outputs


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
    assert set(calls[0]) == {"call", "prompt_tokens", "window", "pruned_tokens",
                             "trimmed_tokens", "compaction", "overflow"}
    assert all(c["window"] == 10_000 and c["overflow"] is False for c in calls)
    assert calls[0]["prompt_tokens"] < calls[-1]["prompt_tokens"]
    assert set(final) == {"final_context", "prompt_tokens", "summary", "files_read",
                          "files_modified", "summaries", "rejected"}
    assert final["summaries"] == {"model": 0, "extractive": 0, "hook": 0}
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
    assert all(c["summarizer"] == "extractive" and c["rejected"] == [] for c in compactions)
    assert final["summaries"] == {"model": 0, "extractive": len(compactions), "hook": 0}
    assert final["rejected"] == []
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


def _read_then_ask(
    body: str, tool: str = "read_file", path: str = "notes.txt"
) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi, I will show you my notes."},
        {"role": "assistant", "content": "Sure, go ahead."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "r1", "type": "function",
         "function": {"name": tool, "arguments": json.dumps({"path": path})}}]},
        {"role": "tool", "tool_call_id": "r1", "name": tool, "content": body},
        {"role": "user", "content": "What is on line 7 of notes.txt?"},
        {"role": "assistant", "content": "Line 7 says: seven."},
    ]


def test_a_file_read_then_asked_about_is_in_the_prompt_of_the_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: a 2.8k-token read (over protect) then a question about it."""
    body = "notes.txt (400 lines)\n" + "\n".join(
        f"Line {i}: the quick brown fox number {i} jumps." for i in range(1, 401)
    )
    path = _write(tmp_path, _read_then_ask(body))
    code, lines = _run(capsys, [str(path), "--window", "8192", "--json", "--prompts"])
    assert code == 0
    question_call = lines[-2]  # the call that answers "What is on line 7?"
    assert question_call["pruned_tokens"] == 0
    tool = shown_outputs(question_call["messages"])
    assert tool and tool[0] == body  # the whole file, not a placeholder
    assert question_call["prompt_tokens"] > 2_800


def test_final_context_is_what_the_next_call_sends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After the answer and a new user message, the next call prunes the answered read."""
    body = "\n".join(f"row {i} " + "word " * 12 for i in range(300))
    messages = [*_read_then_ask(body), {"role": "user", "content": "Thanks! Now something else."}]
    code, lines = _run(capsys, [str(_write(tmp_path, messages)), "--window", "8192", "--json"])
    assert code == 0
    final = lines[-1]
    tool = shown_outputs(final["final_context"])[0]
    assert tool.startswith("[Old tool result content cleared: read_file notes.txt")
    assert "read it again if you need it]" in tool
    assert final["final_context"][-1]["content"] == "Thanks! Now something else."


def test_other_agents_tool_names_feed_file_tracking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = _read_then_ask("tiny", tool="Read", path="src/a.py")
    messages.insert(-1, {"role": "assistant", "content": "", "tool_calls": [{"id": "w1",
                    "type": "function", "function": {"name": "Edit", "arguments": json.dumps(
                        {"file_path": "src/b.py", "old_string": "x", "new_string": "y"})}}]})
    messages.insert(-1, {"role": "tool", "tool_call_id": "w1", "content": "edited"})
    code, lines = _run(capsys, [str(_write(tmp_path, messages)), "--json"])
    assert code == 0
    assert lines[-1]["files_read"] == ["src/a.py"]
    assert lines[-1]["files_modified"] == ["src/b.py"]


def test_prompts_flag_prints_every_calls_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = _run(capsys, [str(_write(tmp_path, _read_then_ask("x"))), "--json", "--prompts"])
    assert code == 0
    for call in lines[:-1]:
        assert call["messages"][0] == {"role": "system", "content": "You are terse."}
    code = main([str(_write(tmp_path, _read_then_ask("x"))), "--prompts"])
    assert code == 0
    assert "[user] What is on line 7 of notes.txt?" in capsys.readouterr().out


def _fact_chat() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Our staging server listens on port 6050. Remember it."},
        {"role": "assistant", "content": "Noted: the staging server listens on port 6050."},
        {"role": "user", "content": "Also, always write dates as YYYY-MM-DD."},
        {"role": "assistant", "content": "Understood."},
    ]


def test_ask_answers_each_question_against_the_final_context() -> None:
    """``--ask``: the question follows exactly what the next call would send."""
    import io

    from assistant.config import DEFAULT_SYSTEM_PROMPT
    from assistant.conversation import Message
    from assistant.replay import replay, resolve_policy
    from tests.fakes.scripted import ScriptedBackend

    backend = ScriptedBackend(["Port 6050.", "YYYY-MM-DD."], window=4_096,
                              trained_context=4_096)
    messages = [Message.from_openai(m) for m in _fact_chat()]
    out = io.StringIO()
    final = replay(messages, backend=backend, policy=resolve_policy("local", None, 4_096),
                   system_prompt=DEFAULT_SYSTEM_PROMPT, use_model=False, out=out,
                   ask=["Which port?", "Which date format?"])
    assert final["answers"] == [
        {"question": "Which port?", "reply": "Port 6050.", "prompt_tokens": ANY_INT},
        {"question": "Which date format?", "reply": "YYYY-MM-DD.", "prompt_tokens": ANY_INT},
    ]
    asked = backend.calls[-1].messages
    assert asked[:-1] == final["final_context"]  # the final context, then the question
    assert asked[-1] == {"role": "user", "content": "Which date format?"}
    assert backend.calls[-1].options is not None
    assert backend.calls[-1].options.temperature == 0.0
    assert json.loads(out.getvalue().splitlines()[-1])["answers"][0]["reply"] == "Port 6050."


class _AnyInt:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and other > 0


ANY_INT: Any = _AnyInt()


@pytest.mark.integration
def test_ask_with_the_embedded_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedded_model_path: Path
) -> None:
    """The real model answers a question about the replayed chat (a 4-message chat: one
    short prompt per question, a 64-token reply at most)."""
    path = _write(tmp_path, _fact_chat())
    code, lines = _run(capsys, [str(path), "--model", str(embedded_model_path), "--json",
                                "--ask", "Which port does the staging server listen on?"])
    assert code == 0
    (answer,) = lines[-1]["answers"]
    assert answer["question"] == "Which port does the staging server listen on?"
    assert "6050" in answer["reply"]
    assert answer["prompt_tokens"] > 50


def test_a_transcript_with_lone_surrogates_and_escapes_replays_as_text(tmp_path: Path) -> None:
    """Issue 47: what a transcript holds is shown, not obeyed, and never fails to print."""
    path = tmp_path / "odd.jsonl"
    path.write_text(
        '{"role":"user","content":"hi \\ud83d \\u001b[2J"}\n'
        '{"role":"assistant","content":"ok \\udce9 \\u001b]0;t\\u0007"}\n', encoding="utf-8")
    for extra in ([], ["--json"]):
        proc = subprocess.run(
            [sys.executable, "-m", "assistant", "replay", str(path), "--summarizer",
             "extractive", "--prompts", *extra],
            capture_output=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        )
        assert proc.returncode == 0, proc.stderr
        assert b"\x1b" not in proc.stdout and b"\x07" not in proc.stdout
        assert b"Traceback" not in proc.stderr
        proc.stdout.decode("utf-8")
