"""Question-time visibility, the read-then-ask workload and real-session replays in the
benchmark (scripted model: the numbers are exact, not the model's skill)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.metrics import summarize, visibility_of
from bench.real_sessions import find_sessions, run_real_session
from bench.report import BenchResult, from_json, render_markdown, to_json
from bench.runner import RunOptions, run_workload
from bench.workloads import ChatStep, ToolStep, generate, load_workload

from .helpers import scripted, tool_workload

OPTS = RunOptions(max_reply_tokens=16, ask_questions=False)


def test_visibility_of_whole_cut_and_cleared_outputs() -> None:
    out = "a.txt (3 lines)\none\ntwo\nthree"
    assert visibility_of([out], f"sys\n{out}\nquestion") == "full"
    cut = "a.txt (3 lines)\none\n[... 1 lines omitted here to fit the context window ...]"
    assert visibility_of([out], cut) == "cut"
    assert visibility_of([out], "[Old tool result content cleared: read_file a.txt]") == "cleared"
    assert visibility_of([out, "other"], f"{out} other") == "full"


def test_w5_reads_one_file_per_question_larger_than_protect() -> None:
    wl = generate("W5", quick=False)
    chats = [s for s in wl.steps if isinstance(s, ChatStep)]
    reads = [s for s in wl.steps if isinstance(s, ToolStep)]
    assert len(chats) == 13 and len(reads) == 12
    assert all(c.answers and c.answers[0].startswith("QX-") for c in chats[1:])
    for step, chat in zip(reads, chats[1:], strict=True):
        assert chat.answers[0] in step.result  # the answer is in the file read before it
        assert "Truncated" not in step.result  # one read holds the whole file
    assert generate("W5", quick=False).to_jsonl() == wl.to_jsonl()


def test_w5_answers_survive_save_and_load(tmp_path: Path) -> None:
    wl = generate("W5", quick=True)
    loaded = load_workload(wl.save(tmp_path))
    assert [s for s in loaded.steps if isinstance(s, ChatStep)] == [
        s for s in wl.steps if isinstance(s, ChatStep)
    ]


def test_policy_shows_every_read_whole_at_question_time_and_none_is_cleared() -> None:
    """With earlier turns and reads over ``protect``, the policy answers each question with
    its read in the prompt; prune-only clears reads the model has answered, never these."""
    wl = tool_workload(turns=4, lines=160)
    for strategy in ("policy", "prune-only"):
        run = run_workload(scripted(), wl, strategy, options=OPTS)
        s = summarize(run)
        assert s.questions_after_outputs == 4
        assert s.visibility_full == 1.0, strategy
    w5 = generate("W5", quick=True)
    run = run_workload(scripted(window=w5.nominal_window), w5, "policy", options=OPTS)
    s = summarize(run)
    assert s.questions_after_outputs == 3 and s.visibility_full == 1.0
    assert s.answered_when_asked == 0.0  # the scripted model never says the code


def _tiny_session(tmp_path: Path) -> Path:
    lines = [
        {"role": "user", "content": "Always answer in French. Read big.py please."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "read_file", "arguments": json.dumps({"path": "src/big.py"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1\n" * 6_000},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "ok, create a branch refactor"},
        {"role": "assistant", "content": "Created."},
    ]
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in lines) + "\n", encoding="utf-8")
    facts = {"must": ["always answer in french", "create a branch refactor", "src/big.py"]}
    path.with_name("tiny.facts.json").write_text(json.dumps(facts), encoding="utf-8")
    return path


def test_real_session_replay_per_strategy_and_the_report(tmp_path: Path) -> None:
    path = _tiny_session(tmp_path)
    assert find_sessions([tmp_path]) == [path]
    # The same session in a second folder (the tests' copy and the shared one) counts once;
    # one whose facts differ is another session.
    (tmp_path / "copy").mkdir()
    copy = _tiny_session(tmp_path / "copy")
    assert find_sessions([tmp_path, tmp_path / "copy"]) == [path]
    copy.with_name("tiny.facts.json").write_text('{"must": ["src/big.py"]}', encoding="utf-8")
    assert find_sessions([tmp_path, tmp_path / "copy"]) == [path, copy]
    policy = run_real_session(path, "policy", "local")
    assert (policy.seen, policy.total, policy.lost) == (3, 3, [])
    none = run_real_session(path, "none", "local")
    assert none.final_overflowed and none.seen == 0  # a prompt that cannot be sent
    result = BenchResult("cmd", "now", True, 0, real_sessions=[policy, none])
    again = from_json(to_json(result, records=True))
    assert again.real_sessions == result.real_sessions
    text = render_markdown(again)
    assert "### Real sessions" in text
    assert "| tiny | local | extractive | (a) policy | 3/3 |" in text
    assert "real session, local mode: every must-fact" in text
