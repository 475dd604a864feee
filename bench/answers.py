"""The answer benchmark: can the model still answer from the prompt the app builds?

For one transcript (a generated workload, or a real session of another agent) and one
variant of the policy (:data:`~bench.strategies.ANSWER_STRATEGIES`), the transcript is
replayed exactly as ``python -m assistant replay`` does: before every assistant message the
compaction controller prepares the prompt (prune, exact count, compaction when
``prompt + reserve > window``, a forced compaction on overflow), then the recorded message
is appended. A workload holds only the user's side, so each user message is followed by one
of the short, content-free replies :data:`REPLIES` in turn (no model writes chat replies
here: the measure is what the context keeps, not what a reply adds). They vary because one
fixed acknowledgement ("Noted.") after every message teaches a small model to answer every
question with it: SmolLM2-135M did exactly that in the first trial.

Questions (:mod:`bench.questions`) are asked at several points of the chat
(:class:`AskPoint`): the latest assistant turn before the first compaction that still
leaves room for a question (``0``), right after the first and the second compaction (``1``,
``2``) and at the end (``end``, with however many compactions happened there: ``3+`` when
three or more). Only questions whose source came before the point are asked there. Each
question is appended as a user message to a copy of the chat at that point and goes through
the controller's ``prepare`` (the app's prompt path), then the model answers at temperature
0.

Two oracles on the same questions and model:

* (i) the source passage alone: one user message holding the source message's text around
  the answer (:func:`bench.questions.passage`), a blank line, then the question;
* (ii) the whole uncompacted history up to the point, then the question, when it fits the
  model's trained window (and the loaded context); otherwise not asked (``None``).

The variant ``rolling-window`` (:mod:`bench.rolling`) is the desktop apps' baseline: at the
record's ask points, each question's prompt is the system prompt and the newest messages of
the uncompacted chat that fit the same window and reserve (no summary, no recall).

The result is one :class:`Asked` row per question, point, variant and model;
:mod:`bench.answers_report` adds them up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assistant.compaction import context
from assistant.compaction.controller import ContextController, ContextTooLargeError
from assistant.compaction.request import CallRequest
from assistant.compaction.tokens import TokenCounter
from assistant.compaction.transcript import load_transcript
from assistant.config import DEFAULT_SYSTEM_PROMPT, Mode, Settings
from assistant.conversation import Conversation, Message
from assistant.llm.base import GenerationOptions, LLMBackend, LLMError
from assistant.llm.context_probe import measured_context

from .questions import (
    Question,
    QuestionsError,
    accepted,
    load_questions,
    passage,
    questions_path,
    spread,
    validate,
    workload_questions,
)
from .recording import recording_backend
from .rolling import ROLLING_WINDOW, RollingWindow
from .strategies import AnswerStrategy, answer_controller
from .workloads import ChatStep, Workload

log = logging.getLogger("bench")

#: The assistant's replies after the user messages of a workload transcript, in turn.
REPLIES = (
    "Understood. I would start with the part that looks riskiest and check it first.",
    "That sounds reasonable to me; let me know if anything changes.",
    "Good point. The safest next step is to confirm the details with the team.",
    "I see. Keeping it simple and writing the decision down would help here.",
    "Thanks for the update. I would review it again before the deadline.",
    "Makes sense. A short checklist would keep this on track.",
)
#: The reply to a user question whose answer the workload knows.
ANSWERED = "It is {answer}."
#: Tokens a question and its answer need beside a point's prompt (point ``0`` keeps them).
QUESTION_ROOM = 300
#: Longest answer generated.
ANSWER_TOKENS = 32


@dataclass
class Transcript:
    """What is replayed and asked: messages (no system prompt), questions, mode, window."""

    name: str
    kind: str  # "workload" or "real session"
    mode: Mode
    system: str
    messages: list[Message]
    questions: list[Question]
    #: The window a quick workload emulates (None: the model's own).
    window_cap: int | None = None


@dataclass
class AskPoint:
    label: str
    compactions: int
    #: Messages of the transcript the chat holds at this point.
    upto: int
    conv: Conversation


@dataclass
class Asked:
    """One question asked once: where, through what, and whether the reply was accepted."""

    source: str
    model: str
    strategy: str
    point: str
    compactions: int
    #: Transcript messages the chat held when asked.
    upto: int
    question: str
    kind: str
    correct: bool
    reply: str
    prompt_tokens: int
    oracle_i: bool
    oracle_ii: bool | None


@dataclass
class TranscriptRun:
    """Everything one transcript gave for one model."""

    source: str
    kind: str
    model: str
    questions: int
    rows: list[Asked] = field(default_factory=list)
    #: Variant -> compactions over the whole replay.
    compactions: dict[str, int] = field(default_factory=dict)
    #: Questions whose own prompt needed a compaction first (the app would do the same).
    asked_compactions: int = 0
    #: Question id -> oracle (i)'s reply (what the model says given the passage alone).
    oracle_replies: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0


# -- transcripts ------------------------------------------------------------------------------


def workload_transcript(wl: Workload, *, limit: int | None = None) -> Transcript:
    """A workload's user side with :data:`REPLIES` after its user messages, and its questions.

    A user message that is a question with a known answer (W5's "In data/part_01.txt, what
    is the code of item 94?") is answered (:data:`ANSWERED`), as the model does with the file
    in view: eleven content-free replies to eleven such questions taught SmolLM2 to answer
    the benchmark's own questions with "Understood. I would start with ..." (measured)."""
    known = {step.text: step.answers for step in wl.steps
             if isinstance(step, ChatStep) and step.answers}
    messages: list[Message] = []
    for raw in wl.messages():
        messages.append(Message.from_openai(raw))
        if raw["role"] == "user":
            answers = known.get(str(raw.get("content") or ""))
            reply = (
                ANSWERED.format(answer=answers[0]) if answers
                else REPLIES[sum(m.role == "assistant" for m in messages) % len(REPLIES)]
            )
            messages.append(Message(role="assistant", content=reply))
    questions = workload_questions(messages, wl.facts, limit=limit)
    return Transcript(wl.name, "workload", wl.mode, DEFAULT_SYSTEM_PROMPT, messages, questions,
                      wl.window_cap)


def session_transcript(path: Path, *, limit: int | None = None) -> Transcript:
    """A real session and the questions written for it (``NAME.questions.json`` beside it,
    or beside a copy of it in another folder: see :func:`find_questions`)."""
    system, messages = load_transcript(path)
    qpath = find_questions(path)
    if qpath is None:
        raise QuestionsError(f"{path}: no {questions_path(path).name} beside it")
    questions = load_questions(qpath)
    problems = validate(messages, questions)
    if problems:
        raise QuestionsError(f"{qpath}: " + "; ".join(problems[:5]))
    if limit is not None:
        questions = spread(questions, limit)
    return Transcript(path.stem, "real session", Mode.LOCAL, system or DEFAULT_SYSTEM_PROMPT,
                      messages, questions)


def find_questions(path: Path) -> Path | None:
    """The questions file of session ``path``: beside it, or beside an identical copy in the
    tests' folder (the shared folder holds the same session without one)."""
    from .real_sessions import default_folders

    own = questions_path(path)
    if own.exists():
        return own
    data = path.read_bytes()
    for folder in default_folders():
        other = folder / path.name
        if other != path and other.exists() and other.read_bytes() == data:
            candidate = questions_path(other)
            if candidate.exists():
                return candidate
    return None


# -- replay and ask points ----------------------------------------------------------------------


def _controller(
    backend: LLMBackend, transcript: Transcript, variant: AnswerStrategy
) -> ContextController:
    return answer_controller(variant, backend, Settings(mode=transcript.mode))


def app_window_cap(backend: LLMBackend, transcript: Transcript) -> int | None:
    """The window the prompts are kept within: the transcript's cap (a quick workload, or
    ``--answer-window``), else what the app's engine uses for this model
    (:func:`assistant.engine.build_engine`: the measured effective context, the probe's or
    the registry's, when it is below the window)."""
    if transcript.window_cap is not None:
        return transcript.window_cap
    settings = Settings(mode=transcript.mode)
    trained = backend.info.trained_context
    measured = settings.effective_policy(trained, measured_context(backend.info)).window
    return measured if measured < settings.effective_policy(trained).window else None


def _prepare(ctl: ContextController, conv: Conversation, system: str) -> tuple[int, bool]:
    """One model call's preparation as the replay does it: (prompt tokens, fits)."""
    pol = ctl.policy()
    req = ctl.prepare(CallRequest(conv, system))
    if req.prompt_tokens >= pol.window:
        try:
            req = ctl.handle_overflow(CallRequest(conv, system))
        except (ContextTooLargeError, LLMError):
            return req.prompt_tokens, False
    return req.prompt_tokens, req.prompt_tokens < pol.window


def replay_points(
    ctl: ContextController, transcript: Transcript
) -> tuple[list[AskPoint], int]:
    """Replay ``transcript`` through ``ctl``; the ask points and the compactions made.

    Points ``0`` and ``end`` are the latest assistant turns (before the first compaction,
    and after the last) whose prompt leaves :data:`QUESTION_ROOM` tokens: a question there
    is answered from that context rather than forcing one more compaction per question
    (the literal end is used when no turn after the last compaction has the room)."""
    pol = ctl.policy()
    conv = Conversation()
    points: list[AskPoint] = []
    roomy: AskPoint | None = None
    zero: AskPoint | None = None
    made = 0
    for i, msg in enumerate(transcript.messages):
        tokens = 0
        if msg.role == "assistant":
            tokens, _fits = _prepare(ctl, conv, transcript.system)
        conv.append(msg.model_copy(deep=True))
        if msg.role != "assistant":
            continue
        count = len(conv.compactions)
        if count > made and count <= 2:
            points.append(AskPoint(str(count), count, i + 1, conv.model_copy(deep=True)))
        made = count
        room = tokens + ctl.counter.message(msg) + pol.reserve + QUESTION_ROOM <= pol.window
        if room:
            roomy = AskPoint("end", count, i + 1, conv.model_copy(deep=True))
            if count == 0:
                zero = AskPoint("0", 0, i + 1, roomy.conv)
    if zero is not None:
        points.insert(0, zero)
    end = len(conv.compactions)
    last = points[-1].upto if points else 0
    if roomy is not None and roomy.compactions == end:
        if roomy.upto > last:
            points.append(roomy)
    elif last < len(transcript.messages):
        points.append(AskPoint("end", end, len(transcript.messages), conv))
    return points, end


# -- asking -------------------------------------------------------------------------------------


def ask(backend: LLMBackend, messages: list[dict[str, Any]]) -> tuple[str, int]:
    """The model's answer at temperature 0 (and the prompt's tokens)."""
    options = GenerationOptions(max_tokens=ANSWER_TOKENS, temperature=0.0)
    text: list[str] = []
    prompt_tokens = 0
    for event in backend.generate(messages, options):
        text.append(event.delta)
        if event.result is not None:
            prompt_tokens = event.result.prompt_tokens
            if event.result.text:
                text = [event.result.text]
    return "".join(text).strip(), prompt_tokens


def _safe_ask(backend: LLMBackend, messages: list[dict[str, Any]]) -> tuple[str, int]:
    try:
        return ask(backend, messages)
    except LLMError as exc:
        log.warning("answer failed: %s", exc)
        return f"[error: {exc}]", 0


def oracle_passage_messages(
    transcript: Transcript, q: Question
) -> list[dict[str, Any]]:
    """Oracle (i): the system prompt, then the source passage and the question."""
    text = passage(transcript.messages, q)
    return context.to_openai([
        context.system_message(transcript.system),
        Message(role="user", content=f"{text}\n\n{q.question}"),
    ])


def oracle_history_messages(
    transcript: Transcript, upto: int, q: Question
) -> list[dict[str, Any]]:
    """Oracle (ii): the system prompt, the whole history to ``upto`` and the question."""
    return context.to_openai([
        context.system_message(transcript.system),
        *transcript.messages[:upto],
        Message(role="user", content=q.question),
    ])


def _history_limit(backend: LLMBackend) -> int:
    info = backend.info
    trained = info.trained_context or info.context_window
    return min(trained, info.context_window) - ANSWER_TOKENS


def run_transcript(
    backend: LLMBackend,
    transcript: Transcript,
    variants: Sequence[AnswerStrategy],
    *,
    model_label: str,
    progress: Callable[[str], None] | None = None,
    history_oracle: bool = True,
) -> TranscriptRun:
    """Replay and ask ``transcript`` with each variant on ``backend``; oracles once
    (``history_oracle=False``: oracle (ii) is not asked, every row's ``oracle_ii`` is None;
    it prefills the whole history once per point, the largest cost of a bounded run)."""
    started = time.perf_counter()
    say = progress or (lambda _text: None)
    run = TranscriptRun(transcript.name, transcript.kind, model_label,
                        len(transcript.questions))
    counter = TokenCounter(backend)
    oracle_i: dict[str, bool] = {}
    for q in transcript.questions:
        reply, _n = _safe_ask(backend, oracle_passage_messages(transcript, q))
        oracle_i[q.id] = _accepted(reply, q)
        run.oracle_replies[q.id] = reply[:200]
    say(f"answers {transcript.name} on {model_label}: oracle (i) "
        f"{sum(oracle_i.values())}/{len(oracle_i)}")
    oracle_ii: dict[tuple[int, str], bool | None] = {}
    limit = _history_limit(backend)
    capped = recording_backend(backend, app_window_cap(backend, transcript))
    replayed: dict[AnswerStrategy, tuple[list[AskPoint], int]] = {}
    for variant in variants:
        points, made = variant_points(capped, transcript, variant, replayed)
        run.compactions[variant] = made
        for point in points:
            asked = [q for q in transcript.questions if q.source < point.upto]
            rows = [_ask_one(capped, transcript, variant, point, q, model_label, oracle_i, run)
                    for q in asked]
            run.rows += rows
            if history_oracle:
                _history_oracle(backend, counter, transcript, point.upto, asked, limit,
                                oracle_ii)
            for row in rows:
                row.oracle_ii = oracle_ii.get((point.upto, row.question))
            fit = [r.oracle_ii for r in rows if r.oracle_ii is not None]
            say(f"answers {transcript.name} {variant} on {model_label}: point {point.label} "
                f"({point.compactions} compactions) {sum(r.correct for r in rows)}/{len(rows)}"
                f"; oracle (i) {sum(r.oracle_i for r in rows)}/{len(rows)}, oracle (ii) "
                + (f"{sum(fit)}/{len(fit)}" if fit else "n/a"))
    run.wall_s = time.perf_counter() - started
    return run


def variant_points(
    backend: LLMBackend, transcript: Transcript, variant: AnswerStrategy,
    replayed: dict[AnswerStrategy, tuple[list[AskPoint], int]] | None = None,
) -> tuple[list[AskPoint], int]:
    """The ask points of ``variant`` and the compactions its replay made (kept in
    ``replayed``). The rolling window is asked at the record's points (the same questions
    at the same messages, so the two compare row for row; its rows keep the record's
    compaction count for the before/after split) and itself compacts nothing."""
    done = {} if replayed is None else replayed
    own: AnswerStrategy = "record" if variant == ROLLING_WINDOW else variant
    if own not in done:
        done[own] = replay_points(_controller(backend, transcript, own), transcript)
    points, made = done[own]
    return points, 0 if variant == ROLLING_WINDOW else made


def _asker(
    backend: LLMBackend, transcript: Transcript, variant: AnswerStrategy
) -> ContextController | RollingWindow:
    if variant == ROLLING_WINDOW:
        policy = _controller(backend, transcript, "record").policy
        return RollingWindow(backend, policy)
    return _controller(backend, transcript, variant)


def _ask_one(
    capped: LLMBackend, transcript: Transcript, variant: AnswerStrategy, point: AskPoint,
    q: Question, model_label: str, oracle_i: dict[str, bool], run: TranscriptRun,
) -> Asked:
    """Question ``q`` asked at ``point`` through ``variant``'s prompt."""
    if variant == ROLLING_WINDOW:  # the whole chat to the point, uncompacted
        conv = Conversation(messages=[m.model_copy(deep=True)
                                      for m in transcript.messages[: point.upto]])
    else:
        conv = point.conv.model_copy(deep=True)
    conv.append(Message(role="user", content=q.question))
    asker = _asker(capped, transcript, variant)
    try:
        req = asker.prepare(CallRequest(conv, transcript.system))
        reply, tokens = _safe_ask(capped, req.messages)
    except (ContextTooLargeError, LLMError) as exc:
        reply, tokens = f"[error: {exc}]", 0
    if len(conv.compactions) > point.compactions:
        run.asked_compactions += 1
    return Asked(
        transcript.name, model_label, variant, point.label, point.compactions, point.upto,
        q.id, q.kind, _accepted(reply, q), reply[:200], tokens, oracle_i[q.id], None,
    )


def _history_oracle(
    backend: LLMBackend, counter: TokenCounter, transcript: Transcript, upto: int,
    asked: list[Question], limit: int, done: dict[tuple[int, str], bool | None],
) -> None:
    for q in asked:
        key = (upto, q.id)
        if key in done:
            continue
        msgs = oracle_history_messages(transcript, upto, q)
        if counter.exact(msgs, None) > limit:
            done[key] = None
            continue
        reply, _n = _safe_ask(backend, msgs)
        done[key] = _accepted(reply, q)


def _accepted(reply: str, q: Question) -> bool:
    return not reply.startswith("[error:") and accepted(reply, q.answers)
