"""The answer benchmark on a scripted reader: ask points, the prompt path, both oracles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assistant.compaction.request import CallRequest
from assistant.conversation import Message
from assistant.llm.base import GenerationOptions
from bench.answer_suite import QUICK_VARIANTS
from bench.answers import (
    Transcript,
    oracle_history_messages,
    oracle_passage_messages,
    replay_points,
    run_transcript,
    session_transcript,
    workload_transcript,
)
from bench.answers_report import overall, run_from_json, run_to_json, section
from bench.cli import main
from bench.questions import accepted
from bench.strategies import ANSWER_STRATEGIES
from bench.workloads import generate
from tests.fakes.scripted import ScriptedBackend

from .helpers import chat_workload

SESSION = Path(__file__).resolve().parents[1] / "data" / "real-sessions" / (
    "pi_refactor_session.jsonl"
)


class Reader(ScriptedBackend):
    """A fake model that reads: asked one of the transcript's questions, it gives the answer
    when the answer is in the prompt before the question and says it does not know
    otherwise. Summaries (grammar calls) are the scripted model's shortest valid ones."""

    def __init__(self, transcript: Transcript, window: int = 8_192) -> None:
        super().__init__(window=window, trained_context=window, default_reply="OK.")
        self.by_text = {q.question: q.answers for q in transcript.questions}

    def _reply(self, msgs: list[dict[str, Any]]) -> str:
        last = str(msgs[-1].get("content") or "")
        asked = next((q for q in self.by_text if last.endswith(q)), None)
        if asked is None:
            return "OK."
        before = [str(m.get("content") or "") for m in msgs[:-1]] + [last[: -len(asked)]]
        for m in msgs:
            before += [str(c.get("function", {}).get("arguments", ""))
                       for c in m.get("tool_calls") or []]
        answers = self.by_text[asked]
        return f"It is {answers[0]}." if accepted("\n".join(before), answers) else "No idea."

    def generate(self, messages: Any, options: GenerationOptions, **kw: Any) -> Any:
        self.replies = [] if options.grammar is not None else [self._reply]
        return super().generate(messages, options, **kw)


def reader(transcript: Transcript, window: int = 8_192) -> Reader:
    return Reader(transcript, window)


def _long_chat() -> Transcript:
    wl = chat_workload(turns=40, words=120)
    return workload_transcript(wl)


def test_points_are_before_and_after_each_compaction_and_the_end() -> None:
    t = _long_chat()
    t.window_cap = 2_048
    backend = reader(t)
    from bench.answers import _controller
    from bench.recording import recording_backend

    ctl = _controller(recording_backend(backend, t.window_cap), t, "record")
    points, made = replay_points(ctl, t)
    assert made >= 3
    assert [p.label for p in points] == ["0", "1", "2", "end"]
    assert [p.compactions for p in points][:3] == [0, 1, 2]
    assert points[-1].compactions == made
    uptos = [p.upto for p in points]
    assert uptos == sorted(uptos)
    # "end" is the latest assistant turn after the last compaction that leaves room for a
    # question (or the literal end when none does): nothing after it is an assistant turn
    # with the same compactions and room, so it is within the chat's last turns.
    assert uptos[-1] == len(t.messages) or t.messages[uptos[-1] - 1].role == "assistant"
    assert uptos[-1] > uptos[-2] and len(t.messages) - uptos[-1] < 10
    assert t.messages[points[0].upto - 1].role == "assistant"


def test_the_reader_answers_what_the_prompt_keeps_and_the_oracles_everything() -> None:
    t = _long_chat()
    t.window_cap = 2_048
    run = run_transcript(reader(t), t, ["record"], model_label="reader")
    assert run.compactions["record"] >= 3
    assert run.rows and all(r.oracle_i for r in run.rows)  # the passage holds the answer
    before = [r for r in run.rows if r.point == "0"]
    assert before and all(r.correct for r in before)  # nothing compacted yet
    # The planted port (turn 1) is asked at every point; after compactions the prompt
    # the app builds decides, and the reply says exactly that.
    port = [r for r in run.rows if r.question == "p2"]
    assert len(port) == 4
    # Oracle (ii): the whole history fits the 8,192-token window at the first point.
    assert before[0].oracle_ii is True
    assert run.asked_compactions >= 0


def test_a_question_is_asked_only_after_its_source() -> None:
    t = workload_transcript(generate("W1", 0, quick=True), limit=12)
    run = run_transcript(reader(t), t, ["record"], model_label="reader")
    sources = {q.id: q.source for q in t.questions}
    assert all(sources[r.question] < r.upto for r in run.rows)
    late = max(t.questions, key=lambda q: q.source)
    points = {r.point for r in run.rows}
    asked_late = {r.point for r in run.rows if r.question == late.id}
    assert asked_late and asked_late < points  # not asked before it was said


def test_oracle_prompts() -> None:
    t = workload_transcript(generate("W2", 0, quick=True), limit=4)
    q = t.questions[0]
    passage = oracle_passage_messages(t, q)
    assert [m["role"] for m in passage] == ["system", "user"]
    assert passage[1]["content"].endswith(q.question)
    history = oracle_history_messages(t, 6, q)
    assert len(history) == 1 + 6 + 1 and history[-1]["content"] == q.question


@pytest.mark.slow  # the 123k-token real session through the record strategy
def test_the_real_session_is_found_and_asked_at_each_point() -> None:
    from bench.real_sessions import default_folders

    assert default_folders()[0] == SESSION.parent  # bench/ at the top of the checkout
    t = session_transcript(SESSION, limit=6)
    run = run_transcript(reader(t, window=10_000), t, ["record"], model_label="reader")
    assert run.compactions["record"] >= 3
    end = [r for r in run.rows if r.point == "end"]
    assert len(end) == 6
    assert all(r.oracle_i for r in run.rows)
    assert all(r.oracle_ii is None for r in end)  # 123k tokens never fit


def test_report_counts_and_ratio_to_oracle_one() -> None:
    t = _long_chat()
    t.window_cap = 2_048
    run = run_transcript(reader(t), t, list(ANSWER_STRATEGIES), model_label="reader")
    back = run_from_json(json.loads(json.dumps(run_to_json(run))))
    assert back.rows == run.rows
    totals = overall([back])
    before = totals["reader", "record", "before"]
    assert before.correct == before.oracle_i == before.asked and before.ratio == 1.0
    text = section([back])
    assert "ratio to (i)" in text
    assert "| T | reader | record | after 0 | 1/1 | 1/1 | 1.00 | 1/1 |" in text
    assert "end (3+)" in text


def test_quick_answers_only_run_with_the_scripted_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ANSWERS.md"
    code = main(["--quick", "--model", "scripted", "--answers-only", "--workload", "W2",
                 "--no-real-sessions", "--questions", "2", "--json", "--answers-report",
                 str(out)])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    (answers,) = data["answers"]
    assert answers["source"] == "W2" and answers["questions"] == 2
    # The quick run's small version: the record, with and without recall.
    assert {r["strategy"] for r in answers["rows"]} == set(QUICK_VARIANTS)
    assert data["summaries"] == []  # no strategy runs in an answers-only run
    assert "## Answers" in out.read_text(encoding="utf-8")



def test_the_recall_variant_puts_an_excerpt_of_the_source_beside_the_question() -> None:
    from assistant.compaction.recall import HEADING_BEFORE
    from bench.answers import _controller
    from bench.questions import Question
    from bench.recording import recording_backend

    t = _long_chat()
    t.window_cap = 2_048
    # A fact stated mid-chat in a short message of its own, compacted away by the end.
    src = 10
    assert t.messages[src].role == "user"
    t.messages[src] = Message(role="user", content="The release codename is Bluefinch.")
    q = Question("c1", "user_fact", "What is the release codename?", ("Bluefinch",), src)
    t.questions.append(q)
    backend = recording_backend(reader(t), t.window_cap)
    points, made = replay_points(_controller(backend, t, "record+recall"), t)
    assert made >= 3
    end = points[-1]
    prompts = {}
    for variant in ("record", "record+recall"):
        conv = end.conv.model_copy(deep=True)
        conv.append(Message(role="user", content=q.question))
        req = _controller(backend, t, variant).prepare(CallRequest(conv, t.system))
        prompts[variant] = (req, str(req.messages[-1]["content"]))
    plain, plain_last = prompts["record"]
    assert plain_last == q.question
    recalled, last = prompts["record+recall"]
    everything = "\n".join(str(m.get("content") or "") for m in plain.messages)
    assert plain.recall is None and not accepted(everything, q.answers)  # compacted away
    assert recalled.recall is not None
    assert last.startswith(HEADING_BEFORE) and last.endswith(q.question)
    # An excerpt of the source message, with its answer, is in the question's turn.
    ids = {e.message_id: e for e in recalled.recall.excerpts}
    excerpt = ids[t.messages[src].id]
    assert accepted(excerpt.text, q.answers) and excerpt.text in last
    # The chat itself is unchanged: recall is part of the prompt only.
    assert conv.messages[-1].content == q.question
    # And the reading model answers it only with recall.
    run = run_transcript(reader(t), t, ["record", "record+recall"], model_label="reader")
    at_end = {r.strategy: r.correct for r in run.rows if r.point == "end" and r.question == "c1"}
    assert at_end == {"record": False, "record+recall": True}


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_answer_window_runs_each_size_with_prompts_kept_within_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--model", "scripted", "--answers-only", "--workload", "W2",
                 "--no-real-sessions", "--questions", "3", "--json", "--answer-strategy",
                 "record", "--answer-window", "2048", "--answer-window", "4096"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    runs = {r["source"]: r for r in data["answers"]}
    assert set(runs) == {"W2 @2048", "W2 @4096"}
    for size, run in ((2_048, runs["W2 @2048"]), (4_096, runs["W2 @4096"])):
        assert run["rows"] and all(r["prompt_tokens"] <= size for r in run["rows"])
    # The smaller size compacts more often over the same chat.
    assert runs["W2 @2048"]["compactions"]["record"] > runs["W2 @4096"]["compactions"]["record"]


@pytest.mark.slow  # over 10 s on a loaded 2-core machine: `make test` only
def test_a_real_session_alone_without_the_history_oracle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--real-session without --workload asks only the session; --no-history-oracle leaves
    oracle (ii) out (n/a) and keeps oracle (i)."""
    session = Path("tests/data/real-sessions/pi_refactor_session.jsonl")
    code = main(["--quick", "--model", "scripted", "--answers-only", "--real-session",
                 str(session), "--questions", "2", "--no-history-oracle", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    (answers,) = data["answers"]
    assert answers["source"] == "pi_refactor_session" and answers["questions"] == 2
    assert answers["rows"] and all(r["oracle_ii"] is None for r in answers["rows"])


def test_a_workload_question_with_a_known_answer_is_answered_in_the_transcript() -> None:
    """W5's user asks about each file it reads; a content-free reply to each of those
    questions teaches a small model to dodge the benchmark's own questions."""
    t = workload_transcript(generate("W5", 0, quick=True), limit=4)
    asked = [i for i, m in enumerate(t.messages)
             if m.role == "user" and m.content.startswith("In data/")]
    assert asked
    for i in asked:
        reply = t.messages[i + 1]
        assert reply.role == "assistant" and reply.content.startswith("It is QX-")
    others = [t.messages[i + 1].content for i, m in enumerate(t.messages)
              if m.role == "user" and i not in asked]
    assert others and all(not c.startswith("It is") for c in others)


def test_the_notes_variant_renders_earlier_turns_and_is_not_run_by_default() -> None:
    from assistant.config import Settings
    from bench.answer_suite import SuiteOptions
    from bench.strategies import answer_controller

    notes = answer_controller("record+recall+notes", ScriptedBackend(), Settings())
    plain = answer_controller("record+recall", ScriptedBackend(), Settings())
    assert notes.switches().earlier_as_notes and notes.recall is not None
    assert not plain.switches().earlier_as_notes
    assert "record+recall+notes" not in SuiteOptions(quick=False).variants
