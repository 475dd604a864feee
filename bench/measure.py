"""Timing of the per-call policy work, for the benchmark (``assistant bench``).

:func:`measure_policy` fills a conversation to about ``fill`` of the window with tool-heavy
turns, warms the memo, then times (median over ``calls`` repetitions):

* ``policy_ms``: the decision from memoized counts: prune plan, segment estimate and cut
  point (the target is at most 2 ms at a full 10k window);
* ``exact_count_ms``: the authoritative ``count_prompt`` of the whole prompt (template render
  plus tokenization; ``LlamaBackend`` tokenizes only the messages it has not seen, verified
  against a full tokenization, so this scales with what is new);
* ``prepare_ms``: the whole ``ContextController.prepare`` (both of the above), of the same
  chat again and again (a prompt encoded before is not encoded again);
* ``prepare_turn_ms``: ``prepare`` as the app calls it, a new question every call (each one
  a prompt never encoded before), in a chat of tool turns (written as notes) a little
  below the threshold, with recall on (its excerpts beside the question).

:func:`summary_prefill` times one model-written compaction of a full local window and records
its KV-cache cost. ``warm=True`` (as in the app, where the chat's last call left the prompt
in llama.cpp's cache) sends the chat once, untimed, before compacting, so the in-context
summary can reuse it; ``warm=False`` measures a chat just reopened (nothing cached).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from assistant.compaction.controller import ContextController
from assistant.compaction.cut_point import find_cut
from assistant.compaction.prune import count_user_turns, plan_prune
from assistant.compaction.recall import Recall
from assistant.compaction.request import CallRequest
from assistant.compaction.summary import ExtractiveSummarizer, ModelSummarizer
from assistant.compaction.tokens import CountingBackend, TokenCounter
from assistant.config import CompactionSwitches, EffectivePolicy, Mode, default_local
from assistant.conversation import CompactionReason, Conversation, Message, ToolCall
from assistant.llm.base import GenerationOptions, LLMBackend, PromptCounter
from assistant.sessions.recall_index import MemoryIndexes

SYSTEM = "You are a helpful assistant running offline."
_CODE = "def handler(request):\n    value = request.get('key', 0)\n    return value * 2\n"


def synthetic_conversation(counter: TokenCounter, target_tokens: int) -> Conversation:
    """User/assistant/tool turns (file reads of a few hundred tokens) up to ``target``."""
    conv = Conversation()
    total = counter.overhead(SYSTEM, None)
    turn = 0
    while True:
        call = ToolCall(name="read_file", arguments={"path": f"src/module_{turn}.py"})
        batch = [
            Message(role="user", content=f"Please look at src/module_{turn}.py and explain it."),
            Message(role="assistant", content="Reading it.", tool_calls=[call]),
            Message(role="tool", tool_call_id=call.id, name="read_file", content=_CODE * 8),
            Message(role="assistant", content=f"Module {turn} doubles the value of 'key'."),
        ]
        size = sum(counter.message(m) for m in batch)
        if total + size > target_tokens:
            return conv
        for msg in batch:
            conv.append(msg)
        total += size
        turn += 1


def _median_ms(fn: Any, calls: int) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(samples), 4)


def measure_policy(
    backend: PromptCounter | None = None,
    *,
    policy: EffectivePolicy | None = None,
    fill: float = 0.85,
    calls: int = 200,
) -> dict[str, Any]:
    """Median milliseconds per call; see the module docstring."""
    pol = policy or default_local().effective(Mode.LOCAL, None)
    be: PromptCounter = backend or CountingBackend(window=pol.window)
    counter = TokenCounter(be)
    conv = synthetic_conversation(counter, int(pol.window * fill))
    controller = ContextController(
        be,
        lambda: pol,
        switches=lambda: CompactionSwitches(prune=False, auto_compact=False),
        summarizer=ExtractiveSummarizer(counter),
        counter=counter,
    )
    visible = conv.kept_messages()

    def decide() -> None:
        plan_prune(
            visible, counter, protect=pol.protect, minimum=pol.minimum,
            user_turns=count_user_turns(conv.messages),
        )
        controller.estimate(conv, SYSTEM)
        find_cut(visible, [counter.message(m) for m in visible], keep=pol.keep_recent)

    def exact() -> None:
        controller.counter.exact([m.to_openai() for m in controller.build_messages(conv, SYSTEM)])

    def prepare() -> None:
        controller.prepare(CallRequest(conv, SYSTEM))

    decide()  # warm the memo
    return {
        "tokenizer": be.name,
        "window": pol.window,
        "messages": len(conv.messages),
        "prompt_tokens": controller.estimate(conv, SYSTEM),
        "policy_ms": _median_ms(decide, calls),
        "exact_count_ms": _median_ms(exact, max(calls // 4, 5)),
        "prepare_ms": _median_ms(prepare, max(calls // 4, 5)),
        "prepare_turn_ms": _turn_ms(be, pol, max(fill - 0.3, 0.1), max(calls // 4, 5)),
    }


def _turn_ms(backend: PromptCounter, pol: EffectivePolicy, fill: float, calls: int) -> float:
    """Median milliseconds of ``prepare`` with a new question each call (about 40 tokens
    a turn with its answer: 50 turns stay below the threshold from ``fill``, 0.3 below
    it)."""
    counter = TokenCounter(backend)
    conv = synthetic_conversation(counter, int(pol.window * fill))
    conv.messages.insert(0, Message(role="user", content=(
        "Notes for later. The staging server listens on port 12345. We deploy on Fridays.")))
    controller = ContextController(
        backend, lambda: pol, switches=lambda: CompactionSwitches(prune=False, auto_compact=False),
        summarizer=ExtractiveSummarizer(counter), counter=counter,
    )
    controller.recall = Recall(counter, MemoryIndexes().get)
    controller.prepare(CallRequest(conv, SYSTEM))  # the chat as opened: indexed, counted
    samples = []
    for i in range(calls):
        conv.append(Message(role="user", content=f"Which port does staging use for {i}?"))
        start = time.perf_counter()
        controller.prepare(CallRequest(conv, SYSTEM))
        samples.append((time.perf_counter() - start) * 1000)
        conv.append(Message(role="assistant", content=f"Port 12345 ({i})."))
    return round(statistics.median(samples), 4)


def summary_prefill(
    backend: LLMBackend, *, policy: EffectivePolicy | None = None, warm: bool = True
) -> dict[str, Any]:
    """Compact a synthetic full chat once with the model; report time and prefill tokens."""
    pol = policy or default_local().effective(Mode.LOCAL, backend.info.trained_context)
    counter = TokenCounter(backend)
    conv = synthetic_conversation(counter, int(pol.window * 0.95))
    summarizer = ModelSummarizer(backend, counter)
    outcomes: list[Any] = []

    class _Spy:
        def summarize(self, request: Any, cancel: Any) -> Any:
            outcome = summarizer.summarize(request, cancel)
            outcomes.append(outcome)
            return outcome

    controller = ContextController(
        backend, lambda: pol, switches=lambda: CompactionSwitches(prune=False, auto_compact=False),
        summarizer=_Spy(), counter=counter,
    )
    if warm:  # the chat's last call, as the app made it (not timed)
        sent = controller.prepare(CallRequest(conv, SYSTEM))
        for _event in backend.generate(sent.messages, GenerationOptions(1, temperature=0.0)):
            pass
    start = time.perf_counter()
    record = controller.compact(CallRequest(conv, SYSTEM), CompactionReason.MANUAL)
    took = time.perf_counter() - start
    outcome = outcomes[0] if outcomes else None
    return {
        "tokens_before": record.tokens_before if record else None,
        "tokens_after": record.tokens_after if record else None,
        "summarizer": record.summarizer if record else None,
        "calls": outcome.calls if outcome else 0,
        "prompt_evaluated": outcome.prompt_evaluated if outcome else 0,
        "prompt_reused": outcome.prompt_reused if outcome else 0,
        "approach": outcome.approach if outcome else "",
        "warm": warm,
        "rejected": list(outcome.rejected) if outcome else [],
        "seconds": round(took, 2),
    }
