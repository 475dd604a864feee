"""The answer benchmark's questions asked at the end of a chat, through any context handling.

:mod:`bench.side_by_side` compares ways of running a model (the embedded engine, the app on
``llama-server``, a chat front end on ``llama-server``); the one number that says what the
context handling is worth is whether the model can still answer. This asks, on one engine:

1. the workload's transcript as the answer benchmark builds it
   (:func:`bench.answers.workload_transcript`: the user's side, short content-free replies)
   is replayed through a context manager exactly as :func:`bench.answers.replay_points`
   does (before each assistant message the manager prepares the prompt, and handles an
   overflow when the prompt does not fit);
2. at the end, each of the answer benchmark's questions (:func:`bench.questions.
   workload_questions`) is appended to a copy of the chat, prepared by a fresh manager of
   the same kind (the app's prompt path: a policy may compact, a front cut cuts) and
   answered at temperature 0 (:func:`bench.answers.ask`); the reply is scored with
   :func:`bench.questions.accepted`.

:func:`passage_answers` is the answer benchmark's oracle (i) on the same questions: the
source passage alone, then the question; it says how many the model can answer at all.

The manager comes from a factory given the (window-capped) backend, so the same code asks
through the app's policy (:func:`bench.strategies.answer_controller`) and through the chat
front ends' cut (:class:`bench.strategies.FrontCut`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from assistant.agent.controller_api import ContextManager
from assistant.compaction.controller import ContextTooLargeError
from assistant.compaction.request import CallRequest
from assistant.conversation import Conversation, Message
from assistant.llm.base import LLMBackend, LLMError

from .answers import Transcript, ask, oracle_passage_messages
from .questions import accepted
from .recording import recording_backend

log = logging.getLogger("bench")

#: Builds the context manager to ask through, for the backend it will count with.
ManagerFactory = Callable[[LLMBackend], ContextManager]


@dataclass
class EndAnswers:
    """How one engine and context handling answered the questions at the end of a chat."""

    #: Questions asked (those that could not be asked count as not answered).
    asked: int = 0
    correct: int = 0
    #: Question id -> the reply (shortened), for the report's reader.
    replies: dict[str, str] = field(default_factory=dict)
    #: Questions that could not be asked (the prompt would not fit, the engine failed).
    failed: int = 0
    #: Prompt tokens of the questions' prompts (their median says how much history is left).
    prompt_tokens: list[int] = field(default_factory=list)


def _fit(manager: ContextManager, conv: Conversation, system: str) -> list[dict[str, object]]:
    """The prompt for the next model call, as the replay and the app build it (raises
    ``ContextTooLargeError`` when nothing makes it fit)."""
    call = CallRequest(conv, system)
    req = manager.prepare(call)
    if req.prompt_tokens >= manager.policy().window:
        req = manager.handle_overflow(call)
    return list(req.messages)


def replay(manager: ContextManager, transcript: Transcript) -> Conversation:
    """The transcript's chat as ``manager`` leaves it after its last message."""
    conv = Conversation()
    for msg in transcript.messages:
        if msg.role == "assistant":
            try:
                _fit(manager, conv, transcript.system)
            except (ContextTooLargeError, LLMError) as exc:  # the next prepare tries again
                log.warning("replay: %s", exc)
        conv.append(msg.model_copy(deep=True))
    return conv


def ask_at_end(
    backend: LLMBackend,
    transcript: Transcript,
    factory: ManagerFactory,
    *,
    progress: Callable[[str], None] | None = None,
) -> EndAnswers:
    """Replay ``transcript`` through ``factory``'s manager on ``backend`` and ask each of
    its questions at the end (see the module docstring)."""
    capped = recording_backend(backend, transcript.window_cap)
    end = replay(factory(capped), transcript)
    out = EndAnswers()
    for q in transcript.questions:
        conv = end.model_copy(deep=True)
        conv.append(Message(role="user", content=q.question))
        out.asked += 1
        try:
            messages = _fit(factory(capped), conv, transcript.system)
            reply, tokens = ask(capped, messages)
        except (ContextTooLargeError, LLMError) as exc:
            log.warning("question %s not asked: %s", q.id, exc)
            out.failed += 1
            continue
        out.correct += accepted(reply, q.answers)
        out.replies[q.id] = reply[:120]
        out.prompt_tokens.append(tokens)
    if progress is not None:
        progress(f"answers at the end of {transcript.name}: {out.correct}/{out.asked}"
                 + (f" ({out.failed} not asked)" if out.failed else ""))
    return out


def passage_answers(backend: LLMBackend, transcript: Transcript) -> int:
    """How many of the questions the model answers given only the source passage (the
    answer benchmark's oracle (i)); a failed call counts as not answered."""
    right = 0
    for q in transcript.questions:
        try:
            reply, _tokens = ask(backend, oracle_passage_messages(transcript, q))
        except LLMError as exc:
            log.warning("oracle question %s failed: %s", q.id, exc)
            continue
        right += accepted(reply, q.answers)
    return right
