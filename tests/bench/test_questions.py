"""Questions of the answer benchmark: scoring, derivation from workloads, the real session's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.compaction.transcript import load_transcript
from bench.answers import workload_transcript
from bench.questions import (
    Question,
    QuestionsError,
    accepted,
    load_questions,
    passage,
    validate,
)
from bench.workloads import WORKLOAD_NAMES, generate

SESSION = Path(__file__).resolve().parents[1] / "data" / "real-sessions" / (
    "pi_refactor_session.jsonl"
)


@pytest.mark.parametrize(
    ("reply", "answers", "ok"),
    [
        ("The port is 6050.", ["6050"], True),
        ("It listens on 16050", ["6050"], False),  # not a number inside another
        ("Budget: 75,600 euros", ["75600"], True),  # thousands separators dropped
        ("Use **spaces**, never tabs", ["space"], True),  # plural and markdown
        ("Use a spacer", ["space"], False),
        ("Dates as `yyyy-mm-dd`", ["YYYY-MM-DD"], True),
        ("Called main-new", ["cli-new", "main-new"], True),  # any one alternative
        ("I do not know.", ["6050"], False),
        ("Track it with - [ ] items", ["- [ ]"], True),
    ],
)
def test_accepted_is_a_normalized_match_at_word_boundaries(
    reply: str, answers: list[str], ok: bool
) -> None:
    assert accepted(reply, answers) is ok


@pytest.mark.parametrize("name", WORKLOAD_NAMES)
def test_every_full_workload_has_forty_usable_questions(name: str) -> None:
    t = workload_transcript(generate(name, 0), limit=48)
    assert len(t.questions) >= 40
    assert validate(t.messages, t.questions) == []
    texts = [q.question for q in t.questions]
    assert len(set(texts)) == len(texts)
    kinds = {q.kind for q in t.questions}
    assert "constraint" in kinds and kinds & {"file_value", "user_number", "user_decision"}


def test_questions_spread_over_the_whole_chat() -> None:
    t = workload_transcript(generate("W2", 0), limit=48)
    sources = sorted(q.source for q in t.questions)
    assert sources[0] < len(t.messages) // 10
    assert sources[-1] > len(t.messages) * 8 // 10


def test_planted_facts_come_first_with_their_source_message() -> None:
    wl = generate("W2", 0, quick=True)
    t = workload_transcript(wl)
    planted = [q for q in t.questions if q.id.startswith("p")]
    assert [q.question for q in planted] == [f.question for f in wl.facts]
    port = next(q for q in planted if "port" in q.question)
    assert port.answers[0] in t.messages[port.source].content


def test_a_small_run_mixes_planted_and_derived_questions() -> None:
    t = workload_transcript(generate("W1", 0, quick=True), limit=4)
    assert len(t.questions) == 4
    assert {q.id[0] for q in t.questions} == {"p", "d"}


def test_the_real_session_has_forty_questions_answerable_from_their_source() -> None:
    _system, messages = load_transcript(SESSION)
    questions = load_questions(SESSION.with_name("pi_refactor_session.questions.json"))
    assert len(questions) >= 40
    assert validate(messages, questions) == []
    kinds = {q.kind for q in questions}
    assert {"instruction", "decision", "number", "path_modified", "file_value"} <= kinds
    # The user's own words are asked about, not only what tools printed.
    assert sum(messages[q.source].role == "user" for q in questions) >= 15


def test_a_passage_is_cut_around_the_answer() -> None:
    _system, messages = load_transcript(SESSION)
    q = Question("x", "file_value", "Which package?", ("@mariozechner/pi-tui",), 2)
    text = passage(messages, q)
    assert len(text) < len(messages[2].content)
    assert "@mariozechner/pi-tui" in text


def test_validate_names_what_is_wrong() -> None:
    _system, messages = load_transcript(SESSION)
    bad = [
        Question("a", "number", "How many?", ("99999",), 253),
        Question("a", "number", "Where?", ("x",), 10_000),
    ]
    problems = validate(messages, bad)
    assert any("a: no accepted answer occurs" in p for p in problems)
    assert any("used twice" in p for p in problems)
    assert any("source 10000" in p for p in problems)


def test_a_malformed_questions_file_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.questions.json"
    path.write_text(json.dumps({"questions": [
        {"id": "q1", "question": "Q?", "answers": ["a"], "source": 0},
        {"id": "q2", "question": "Q?", "answers": "a", "source": 0},
    ]}), encoding="utf-8")
    with pytest.raises(QuestionsError, match="question 2"):
        load_questions(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(QuestionsError, match=r"s\.questions\.json"):
        load_questions(path)
