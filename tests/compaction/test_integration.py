"""With the real embedded model (SmolLM2-135M): a 30-turn local-mode session.

Tool calls are scripted (file-sized read_file outputs); every assistant answer is generated
by the model with a short ``max_tokens``; summaries are written by the same model (or the
extractive fallback when its summaries are rejected). The session must never overflow and
every constraint and file path planted in the first turns must still be in the context the
model sees at the end.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from assistant.compaction.controller import ContextController
from assistant.compaction.events import CompactionFinished, ContextEvent
from assistant.compaction.recall import Recall
from assistant.compaction.request import CallRequest
from assistant.compaction.tokens import TokenCounter
from assistant.config import CompactionSwitches, default_local
from assistant.conversation import Conversation, Message, ToolCall
from assistant.llm.base import GenerationOptions, LLMBackend, PromptEncoder
from assistant.sessions.recall_index import MemoryIndexes

from .helpers import CONSTRAINTS, PLANTED_PATHS, SYSTEM, file_body, session_transcript

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ANSWER = (
    "The file {path} defines a set of small helper functions. Each one takes a value, adds a "
    "constant to it and returns the result; there is no state, no input or output and no "
    "error handling. The functions are independent, so they could be merged into one "
    "parametrised helper. Nothing in it conflicts with what you asked me to keep in mind. "
    "I checked the names, the arguments and the return values one by one: every function "
    "is pure, every argument is an integer and every result is the argument plus the line "
    "number. There are no imports, no globals, no classes and no tests for this module yet, "
    "so adding a small table-driven test would be cheap and would protect later changes."
)


@pytest.fixture(scope="module")
def backend(embedded_model_path: Any) -> Any:
    # A missing model fails (the session fixture says how to provide it), as everywhere.
    from assistant.llm.llama_backend import LlamaBackend

    be = LlamaBackend.load(embedded_model_path, n_ctx=10_000)
    yield be
    be.close()


def _generate(backend: LLMBackend, messages: list[dict[str, Any]], max_tokens: int) -> str:
    text = ""
    for event in backend.generate(messages, GenerationOptions(max_tokens, temperature=0.0)):
        text += event.delta
    return text.strip() or "(no answer)"


def test_segment_sums_match_the_real_template(backend: LLMBackend) -> None:
    counter = TokenCounter(backend)
    conv = Conversation()
    for m in session_transcript(turns=3, lines=20)[1:]:
        conv.append(Message.from_openai(m))
    msgs = [Message(id="system", role="system", content=SYSTEM), *conv.messages]
    exact = backend.count_prompt([m.to_openai() for m in msgs])
    estimate = counter.overhead(SYSTEM, None) + sum(counter.message(m) for m in conv.messages)
    assert estimate == exact
    # prepare decides on these sums and encodes only the prompt it sends (issue 27): with
    # the earlier calls written as notes and recall's excerpts beside the question, the sum
    # is still the exact count of what the model evaluates.
    conv.append(Message(role="user", content="Which files must I never modify, again?"))
    ctl = ContextController(backend, lambda: default_local().effective("local", None),
                            counter=counter)
    ctl.recall = Recall(counter, MemoryIndexes().get)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.recall is not None
    assert any("[I ran read_file" in str(m.get("content")) for m in req.messages)
    assert counter.additive
    assert isinstance(backend, PromptEncoder)
    assert req.prompt == backend.encode_prompt(req.messages)


def test_thirty_turn_local_session_never_overflows_and_keeps_constraints(
    backend: LLMBackend,
) -> None:
    """Answers are scripted (short real calls would only add prefill time); the real model
    counts every prompt exactly, writes the summaries, and answers right after each
    compaction and at the end (max_tokens small), so the backend itself checks the fit."""
    policy = default_local().effective("local", backend.info.trained_context)
    events: list[ContextEvent] = []
    ctl = ContextController(backend, lambda: policy, on_event=events.append)
    conv = Conversation()
    started = time.perf_counter()
    final: list[dict[str, Any]] = []
    real_calls = 0

    def call(max_tokens: int, force_real: bool = False) -> None:
        nonlocal final, real_calls
        req = ctl.prepare(CallRequest(conv, SYSTEM))
        assert req.prompt_tokens + policy.reserve <= policy.window, req.notices
        assert req.prompt_tokens == backend.count_prompt(req.messages)
        final = req.messages
        if req.compaction is not None or force_real:
            real_calls += 1
            _generate(backend, req.messages, max_tokens)  # raises on overflow

    for i in range(30):
        text = f"Turn {i}: please read the next file and tell me what it does."
        if i < len(CONSTRAINTS):
            text = f"{CONSTRAINTS[i]} {text}"
        path = PLANTED_PATHS[i] if i < len(PLANTED_PATHS) else f"src/module_{i}.py"
        conv.append(Message(role="user", content=text))
        call(1)
        tc = ToolCall(name="read_file", arguments={"path": path})
        conv.append(Message(role="assistant", tool_calls=[tc]))
        conv.append(Message(role="tool", tool_call_id=tc.id, name="read_file",
                            content=file_body(i, 120)))
        call(1)
        conv.append(Message(role="assistant", content=ANSWER.format(path=path)))
    conv.append(Message(role="user", content="Which files did we look at first?"))
    call(8, force_real=True)
    took = time.perf_counter() - started

    finished = [e for e in events if isinstance(e, CompactionFinished)]
    assert finished, "the session should have needed at least one compaction"
    assert real_calls >= 2
    context_text = "\n".join(str(m.get("content", "")) for m in final)
    for constraint in CONSTRAINTS:
        assert constraint in context_text
    for path in PLANTED_PATHS:
        assert path in context_text
    report = {
        "seconds": round(took, 1),
        "compactions": [
            {"before": e.record.tokens_before, "after": e.record.tokens_after,
             "summarizer": e.record.summarizer, "duration_s": e.record.duration_s}
            for e in finished
        ],
    }
    artifacts = Path("test-artifacts")
    if artifacts.is_dir():
        (artifacts / "compaction_session.json").write_text(json.dumps(report, indent=2))
    print(report)


def test_replay_with_the_embedded_summarizer_loads_the_model(
    backend: LLMBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assistant.replay import main

    path = tmp_path / "chat.jsonl"
    path.write_text(
        "\n".join(json.dumps(m) for m in session_transcript(turns=2, lines=10)), encoding="utf-8"
    )
    assert main([str(path), "--summarizer", "embedded", "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert lines[0]["window"] == backend.info.trained_context  # local: 10k capped to 8,192
    assert lines[-1]["files_read"] == PLANTED_PATHS[:2]


def test_summary_on_the_cached_chat_evaluates_only_the_request(backend: Any) -> None:
    """With the real llama.cpp KV cache: after a chat call, a compaction writes its summary
    on top of the cached prompt and evaluates only the request (a few hundred tokens)."""
    from assistant.compaction.summary.summarizer import ModelSummarizer, SummaryOutcome

    outcomes: list[SummaryOutcome] = []
    summarizer = ModelSummarizer(backend)

    class Spy:
        def summarize(self, request: Any, cancel: Any) -> SummaryOutcome:
            outcomes.append(summarizer.summarize(request, cancel))
            return outcomes[-1]

    from dataclasses import replace

    pol = replace(default_local().effective("local", backend.info.trained_context),
                  keep_recent=300)
    ctl = ContextController(backend, lambda: pol, summarizer=Spy(),
                            switches=lambda: CompactionSwitches(prune=False, auto_compact=False))
    conv = Conversation()
    conv.append(Message(role="user", content=CONSTRAINTS[0] + " Please read the files."))
    for i, path in enumerate(PLANTED_PATHS):
        call = ToolCall(name="read_file", arguments={"path": path})
        conv.append(Message(role="assistant", tool_calls=[call]))
        conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                            content=file_body(i, lines=40)))
        conv.append(Message(role="assistant", content=f"I read {path}."))
        conv.append(Message(role="user", content=f"Thanks. What about part {i}?"))
    sent = ctl.prepare(CallRequest(conv, SYSTEM))
    assert sent.prompt_tokens > 1_000
    _generate(backend, sent.messages, 4)  # the chat's call: its prompt is now cached
    record = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert record is not None and outcomes
    out = outcomes[0]
    assert out.approach == "in-context" and out.calls >= 1
    assert out.prompt_evaluated < 400 * out.calls  # the request only, not the chat
    assert out.prompt_reused > 1_000
