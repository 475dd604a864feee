"""The answer benchmark's questions at the end of a chat, through a front cut and through the
app's policy, on a scripted model that answers from what its prompt still holds."""

from __future__ import annotations

from typing import Any

from assistant.config import Settings
from assistant.conversation import Message
from bench.answers import Transcript
from bench.end_answers import ask_at_end, passage_answers, replay
from bench.questions import Question
from bench.strategies import answer_controller, build_strategy
from tests.fakes.scripted import ScriptedBackend

SYSTEM = "You are a test assistant."
WINDOW = 1_024


def _reader(messages: list[dict[str, Any]]) -> str:
    """A model that answers with the sentences of its prompt that share a word of five
    letters or more with the question (its last line): it knows what it was shown."""
    question = str(messages[-1]["content"]).splitlines()[-1]
    keys = [w for w in (w.strip("?").lower() for w in question.split()) if len(w) >= 5]
    context = " ".join(str(m.get("content") or "") for m in messages)
    said = [s for s in context.split(". ") if any(k in s.lower() for k in keys)]
    return ". ".join(said) or "I do not know."


def _transcript() -> Transcript:
    filler = "We talked about the weather and nothing else of note. " * 25
    said = [
        "The staging server listens on port 4321. " + filler,
        "Nothing new today. " + filler,
        "Still nothing new. " + filler,
        "We agreed to meet in Oslo. " + filler,
    ]
    messages: list[Message] = []
    for text in said:
        messages += [Message(role="user", content=text),
                     Message(role="assistant", content="Noted.")]
    questions = [
        Question("p1", "number", "Which port does the staging server listen on?", ("4321",), 0),
        Question("p2", "city", "In which city did we agree to meet?", ("Oslo",), 6),
    ]
    return Transcript("T", "workload", "local", SYSTEM, messages, questions, WINDOW)


def _backend() -> ScriptedBackend:
    backend = ScriptedBackend(window=WINDOW, trained_context=WINDOW)
    backend.enqueue(*([_reader] * 200))
    return backend


def test_a_front_cut_forgets_what_was_cut_and_keeps_what_is_recent() -> None:
    t = _transcript()

    def front_cut(b: Any) -> Any:
        return build_strategy("front-cut", b, Settings(mode=t.mode)).inner

    got = ask_at_end(_backend(), t, front_cut)
    assert (got.asked, got.failed) == (2, 0)
    assert "4321" not in got.replies["p1"] and "Oslo" in got.replies["p2"]
    assert got.correct == 1
    assert all(n < WINDOW for n in got.prompt_tokens)


def test_the_policy_answers_through_the_prompt_it_prepares() -> None:
    t = _transcript()

    def policy(b: Any) -> Any:
        return answer_controller("record", b, Settings(mode=t.mode))

    backend = _backend()
    end = replay(policy(backend), t)
    assert end.compactions, "the chat is larger than the window: the policy compacts"
    got = ask_at_end(_backend(), t, policy)
    # The record the policy writes keeps the user's first request (the goal): both answers.
    assert (got.asked, got.correct, got.failed) == (2, 2, 0)
    assert "4321" in got.replies["p1"] and "Oslo" in got.replies["p2"]


def test_the_passage_alone_is_the_ceiling() -> None:
    t = _transcript()
    assert passage_answers(_backend(), t) == 2
    forgetful = ScriptedBackend(window=WINDOW, trained_context=WINDOW, default_reply="No idea.")
    assert passage_answers(forgetful, t) == 0
