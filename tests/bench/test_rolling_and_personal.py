"""The rolling-window answer variant and the long personal chats (scripted model only)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assistant.compaction.request import CallRequest
from assistant.config import Settings
from assistant.conversation import Conversation, Message, ToolCall
from assistant.llm.fallback_tokenizer import Cl100kTokenizer
from bench.answer_suite import SuiteOptions, run_suite, with_rolling
from bench.answers import (
    Transcript,
    oracle_passage_messages,
    run_transcript,
    session_transcript,
    workload_transcript,
)
from bench.answers_report import section, versus_rolling
from bench.cli import main
from bench.personal_chats import (
    KINDS,
    MAX_TOKENS,
    MIN_TOKENS,
    PersonalChat,
    generate_chat,
    personal_transcript,
    pick,
    save,
)
from bench.questions import accepted, message_text, passage
from bench.recording import recording_backend
from bench.rolling import ROLLING_WINDOW, RollingWindow
from bench.strategies import answer_controller

from .helpers import chat_workload, scripted
from .test_answers import reader

# -- the rolling window -----------------------------------------------------------------------


def _rolling(window: int = 2_048) -> tuple[RollingWindow, int, int]:
    backend = scripted(window)
    policy = answer_controller("record", backend, Settings()).policy
    return RollingWindow(backend, policy), policy().window, policy().reserve


def _chat_with_tools(turns: int) -> Conversation:
    conv = Conversation()
    for i in range(turns):
        conv.append(Message(role="user", content=f"Turn {i}: read the file. " + "word " * 60))
        call = ToolCall(id=f"c{i}", name="read_file", arguments={"path": f"f{i}.txt"})
        conv.append(Message(role="assistant", content="", tool_calls=[call]))
        conv.append(Message(role="tool", content="line " * 120, tool_call_id=f"c{i}",
                            name="read_file"))
        conv.append(Message(role="assistant", content=f"File {i} read. " + "ok " * 20))
    conv.append(Message(role="user", content="What was in the last file?"))
    return conv


def test_the_rolling_window_keeps_the_newest_messages_that_fit() -> None:
    rolling, window, reserve = _rolling()
    conv = _chat_with_tools(30)
    req = rolling.prepare(CallRequest(conv, "You are helpful."))
    assert req.prompt_tokens + reserve <= window
    assert req.messages[0]["role"] == "system" and req.messages[0]["content"]
    assert req.messages[1]["role"] != "tool"  # never a result without its call
    assert req.messages[-1]["content"] == "What was in the last file?"
    kept = len(req.messages) - 1
    assert 4 < kept < len(conv.messages)
    # The newest messages, in order, unchanged.
    tail = [m.content for m in conv.messages[-kept:]]
    assert [m["content"] for m in req.messages[1:]] == tail
    # One more message (with its call, if a result) would not have fitted.
    start = len(conv.messages) - kept
    more = start - 1
    while more > 0 and conv.messages[more].role == "tool":
        more -= 1
    bigger = rolling._request("You are helpful.", conv.messages[more:], None)
    assert bigger.prompt_tokens + reserve > window
    assert rolling.compact(CallRequest(conv, "x"), "manual") is None


def test_a_short_chat_is_sent_whole() -> None:
    rolling, _window, _reserve = _rolling(8_192)
    conv = _chat_with_tools(2)
    req = rolling.prepare(CallRequest(conv, "S"))
    assert len(req.messages) == 1 + len(conv.messages)


def test_every_suite_run_asks_the_rolling_window() -> None:
    assert with_rolling(["record"]) == ["record", ROLLING_WINDOW]
    assert with_rolling([ROLLING_WINDOW, "record"]) == [ROLLING_WINDOW, "record"]


def _long_chat() -> Transcript:
    t = workload_transcript(chat_workload(turns=40, words=120))
    t.window_cap = 2_048
    return t


def test_the_rolling_window_is_asked_at_the_records_points_and_forgets_the_start() -> None:
    t = _long_chat()
    backend = reader(t)
    run = run_transcript(backend, t, ["record+recall", ROLLING_WINDOW], model_label="reader")
    app = {(r.point, r.question): r for r in run.rows if r.strategy == "record+recall"}
    rolled = {(r.point, r.question): r for r in run.rows if r.strategy == ROLLING_WINDOW}
    assert rolled and set(rolled) == set(app)  # the same questions at the same points
    assert all(rolled[k].compactions == app[k].compactions for k in rolled)
    assert run.compactions[ROLLING_WINDOW] == 0
    policy = answer_controller("record", recording_backend(backend, 2_048), Settings()).policy
    assert all(0 < r.prompt_tokens <= policy().window - policy().reserve
               for r in rolled.values())
    # The port was said in the first message: kept before any compaction, cut at the end.
    port = {r.point: r.correct for r in rolled.values() if r.question == "p2"}
    assert port["0"] is True and port["end"] is False
    rows = versus_rolling([run])
    assert [r[2] for r in rows] == ["all", "after"]
    best = app_count = sum(r.correct for r in app.values())
    assert rows[0][3] == "record+recall" and rows[0][4] == f"{best}/{len(app)}"
    rolling_count = sum(r.correct for r in rolled.values())
    assert rows[0][5] == f"{rolling_count}/{len(rolled)}"
    assert rows[0][6] == (f"{app_count / rolling_count:.2f}" if rolling_count else "n/a")
    text = section([run])
    assert "app / rolling" in text and "| T | reader | all | record+recall |" in text


# -- the personal chats -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chats() -> list[PersonalChat]:
    return [generate_chat(seed) for seed in (0, 1, 2)]


def test_the_chats_are_deterministic_long_and_dated(chats: list[PersonalChat]) -> None:
    again = generate_chat(0)
    assert [m.content for m in again.messages] == [m.content for m in chats[0].messages]
    assert again.questions == chats[0].questions
    assert [m.content for m in generate_chat(3).messages] != [
        m.content for m in chats[0].messages]
    tok = Cl100kTokenizer()
    for chat in chats:
        tokens = sum(tok.count(m.content) for m in chat.messages)
        assert tokens == chat.tokens and MIN_TOKENS <= tokens <= MAX_TOKENS
        roles = [m.role for m in chat.messages]
        assert roles == ["user", "assistant"] * (len(roles) // 2)
        dated = [m.content for m in chat.messages if re.match(r"\(\w+day \d+ \w+ 2025\)",
                                                               m.content)]
        assert len(dated) == len(chat.days) >= 8
        assert chat.days == sorted(chat.days)
        assert {q.kind for q in chat.questions} == set(KINDS)


def test_every_answer_is_in_its_evidence_and_nowhere_else(chats: list[PersonalChat]) -> None:
    for chat in chats:
        msgs = chat.messages
        for q in chat.questions:
            assert accepted(passage(msgs, q), q.answers), q
            holders = [i for i, m in enumerate(msgs) if accepted(message_text(m), q.answers)]
            assert holders == [q.source], q
            if q.kind == "assistant":  # only the assistant stated it
                assert msgs[q.source].role == "assistant"
                assert msgs[q.source - 1].role == "user"
            else:
                assert msgs[q.source].role == "user"


def test_a_spread_fact_needs_both_sessions(chats: list[PersonalChat]) -> None:
    for chat in chats:
        spread = [q for q in chat.questions if q.kind == "spread"]
        assert len(spread) == 2
        for q in spread:
            (early,) = q.also
            assert early < q.source
            day = [i for i, m in enumerate(chat.messages) if m.content.startswith("(")]
            assert any(early < d <= q.source for d in day)  # another session
            # The person is named in both; the question names neither.
            names = set(re.findall(r"[A-Z][a-z]+", chat.messages[early].content)) & set(
                re.findall(r"[A-Z][a-z]+", chat.messages[q.source].content))
            assert names and not any(n in q.question for n in names - {"My"})
            text = passage(chat.messages, q)
            assert chat.messages[early].content[:100] in text


def test_a_corrected_fact_asks_for_the_newest_value(chats: list[PersonalChat]) -> None:
    for chat in chats:
        corrected = [q for q in chat.questions if q.kind == "corrected"]
        assert len(corrected) == 3
        for q in corrected:
            topic = ("book club" if "book club" in q.question
                     else "kitchen renovation" if "kitchen" in q.question
                     else q.question.split("holiday to ")[1].split(",")[0])
            said = [i for i, m in enumerate(chat.messages) if topic in m.content]
            assert len(said) >= 2 and said[-1] == q.source  # the newest mention
            old = chat.messages[said[0]].content
            assert not accepted(old, q.answers)  # it held another value


def test_a_small_run_takes_the_kinds_in_turn(chats: list[PersonalChat]) -> None:
    six = pick(chats[0].questions, 6)
    assert len(six) == 6 and {q.kind for q in six} == set(KINDS)
    assert [q.source for q in six] == sorted(q.source for q in six)
    assert pick(chats[0].questions, None) == chats[0].questions


def test_the_questions_file_round_trips(chats: list[PersonalChat], tmp_path: Path) -> None:
    chat = chats[0]
    path = save(chat, tmp_path)
    raw = json.loads(path.with_name(path.stem + ".questions.json").read_text("utf-8"))
    assert any("also" in q for q in raw["questions"])
    t = session_transcript(path)  # the real sessions' loader validates every question
    assert t.questions == chat.questions
    assert [m.content for m in t.messages] == [m.content for m in chat.messages]
    spread = next(q for q in t.questions if q.also)
    prompt = oracle_passage_messages(t, spread)[1]["content"]
    assert prompt.endswith(spread.question)
    assert t.messages[spread.also[0]].content[:80] in prompt


def test_the_oracle_and_scoring_on_a_personal_chat() -> None:
    t = personal_transcript(2, limit=5)
    assert len(t.questions) == 5 and t.kind == "personal chat"
    run = run_transcript(reader(t), t, ["record", ROLLING_WINDOW], model_label="reader",
                         history_oracle=False)
    assert run.rows and all(r.oracle_i for r in run.rows)  # the evidence answers each one
    assert run.compactions["record"] >= 1  # 10k+ tokens in an 8k window
    assert {r.strategy for r in run.rows} == {"record", ROLLING_WINDOW}
    end = [r for r in run.rows if r.point == "end"]
    assert end and all(r.compactions >= 1 for r in end)


def test_the_suite_and_the_cli_ask_the_personal_chats(
    capsys: pytest.CaptureFixture[str],
) -> None:
    notes: list[str] = []
    runs = run_suite([], [], SuiteOptions(quick=True, models=["scripted"], variants=["record"],
                                          questions=2, personal=[7], history_oracle=False),
                     lambda _name, _n: scripted(8_192), progress=lambda _t: None, notes=notes)
    assert not notes and [r.source for r in runs] == ["personal-7"]
    assert {r.strategy for r in runs[0].rows} == {"record", ROLLING_WINDOW}
    code = main(["--quick", "--model", "scripted", "--answers-only", "--personal-chats", "1",
                 "--seed", "7",
                 "--no-real-sessions", "--questions", "1", "--answer-strategy", "record",
                 "--no-history-oracle", "--json"])
    assert code == 0
    (answers,) = json.loads(capsys.readouterr().out)["answers"]
    assert answers["source"] == "personal-7" and answers["kind"] == "personal chat"
    assert {r["strategy"] for r in answers["rows"]} == {"record", ROLLING_WINDOW}
