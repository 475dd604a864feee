"""Focused measurements beside the workloads.

* :func:`generation_speed` - tokens per second of the app's streaming path
  (``LlamaBackend.generate_tokens``: detokenize, stop strings, cancel checks) against raw
  ``Llama.generate`` on the same prompt tokens, same sampler, same cached prefix. Reps
  alternate between the two; medians are reported.
* :func:`policy_time` - the controller's per-call work at a full local window (10,000
  tokens), through :func:`bench.measure.measure_policy` with the model's own
  tokenizer.
* :func:`recall_time` - retrieval at question time over a 10,000-message chat (the
  index's term counts and BM25 search, and the whole picking of excerpts); target: under
  20 ms.
* :func:`summary_time` - one compaction of a full local window written by the model
  (:func:`bench.measure.summary_prefill`), with the chat cached as in the
  app and, optionally, with nothing cached.

The raw side is :meth:`LlamaBackend.raw_generation_seconds`; for other backends
:func:`generation_speed` returns None.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Literal

from assistant.compaction.recall import SEARCH_LIMIT, Recall, distinctive
from assistant.compaction.tokens import CountingBackend, TokenCounter
from assistant.config import DEFAULT_SYSTEM_PROMPT, Mode, default_local
from assistant.conversation import Conversation, Message
from assistant.llm.base import GenerationOptions, GenerationResult, KVCacheAware, LLMBackend
from assistant.llm.llama_backend import LlamaBackend
from assistant.sessions.recall_index import RecallIndex
from assistant.sessions.recall_text import match_expression, query_terms

from .measure import measure_policy, summary_prefill
from .metrics import median

_STORY = (
    "Write a long, detailed story about a lighthouse keeper who finds a message in a bottle. "
    "Describe the weather, the sea, the keeper's daily routine and the message itself."
)


@dataclass
class SpeedResult:
    prompt_tokens: int
    tokens: int
    app_tps: float
    raw_tps: float
    reps: int

    @property
    def ratio(self) -> float:
        return self.app_tps / self.raw_tps if self.raw_tps else 0.0


def greedy_call(backend: LlamaBackend, tokens: list[int], max_tokens: int) -> GenerationResult:
    """One greedy call of the app's path on exact prompt tokens; its result."""
    result: GenerationResult | None = None
    for event in backend.generate_tokens(tokens, GenerationOptions(max_tokens, temperature=0.0)):
        if event.result is not None:
            result = event.result
    assert result is not None
    return result


def generation_speed(
    backend: LLMBackend, *, context_tokens: int = 1_024, max_tokens: int = 64, reps: int = 3
) -> SpeedResult | None:
    """In-app vs raw generation speed on a prompt of about ``context_tokens`` tokens."""
    if not isinstance(backend, LlamaBackend):
        return None
    filler = " ".join(
        f"Note {i}: the keeper logged wind force {i % 9} and {i % 4} passing ships."
        for i in range(context_tokens // 16)
    )
    msgs = [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": filler + "\n\n" + _STORY},
    ]
    tokens = backend.tokenize(backend.render_prompt(msgs))
    greedy_call(backend, tokens, 2)  # warm: the prompt is now cached for both paths
    app: list[float] = []
    raw: list[float] = []
    produced = 0
    for _ in range(reps):
        res = greedy_call(backend, tokens, max_tokens)
        produced = res.completion_tokens
        if res.completion_tokens == 0 or res.generate_s <= 0:
            continue
        app.append(res.completion_tokens / res.generate_s)
        # Same work: the app also sampled the end-of-turn token when it stopped on one.
        count = res.completion_tokens + (1 if res.finish_reason == "stop" else 0)
        raw.append(
            res.completion_tokens / backend.raw_generation_seconds(tokens, count, temperature=0.0)
        )
    if not app or not raw:
        return None
    return SpeedResult(
        prompt_tokens=len(tokens), tokens=produced, app_tps=median(app) or 0.0,
        raw_tps=median(raw) or 0.0, reps=len(app),
    )


def policy_time(backend: LLMBackend | None, *, calls: int = 100) -> dict[str, Any]:
    """Per-call policy time at a full 10,000-token local window (just below compaction)."""
    pol = default_local().effective(Mode.LOCAL, None)
    fill = (pol.window - pol.reserve) / pol.window - 0.01
    return measure_policy(backend, policy=pol, fill=fill, calls=calls)


def summary_time(backend: LLMBackend, *, cold: bool = True) -> dict[str, Any]:
    """One model-written compaction of a full local window (seconds, summarizer used).

    The main numbers are for the app's usual case: the chat's last call left the prompt in
    llama.cpp's cache (the in-context summary reuses it). With ``cold`` the same compaction
    is also timed with nothing cached (a chat just reopened), under ``"cold"``.
    """
    warm = summary_prefill(backend, warm=True)
    if cold:
        if isinstance(backend, KVCacheAware):
            backend.reset_kv_cache()
        warm["cold"] = summary_prefill(backend, warm=False)
    return warm


def _chat_corpus(messages: int, seed: int) -> list[Message]:
    """A long synthetic chat: user and assistant prose over a Zipf-like vocabulary, and
    every tenth message a multi-line tool output (the shape recall indexes)."""
    rng = random.Random(seed)
    vocab = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "po")
             for b in ("ban", "cor", "dil", "fen", "gum", "hox", "jet", "lam", "mor", "nip",
                       "pex", "quo", "rin", "sul", "tav", "ulk", "vem", "wob", "yar", "zin")]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    out: list[Message] = []
    for i in range(messages):
        words = rng.choices(vocab, weights, k=rng.randint(8, 60))
        if i % 10 == 9:
            lines = [" ".join(words[j : j + 6]) + f" = {rng.randint(0, 99_999)}"
                     for j in range(0, len(words), 6)]
            out.append(Message(role="tool", tool_call_id=f"call_{i}", name="read_file",
                               content="\n".join(lines)))
        else:
            role: Literal["user", "assistant"] = "user" if i % 2 == 0 else "assistant"
            out.append(Message(role=role, content=" ".join(words) + f". Item {i} costs {i % 97}."))
    return out


def recall_time(*, messages: int = 10_000, queries: int = 50, seed: int = 7) -> dict[str, Any]:
    """Retrieval at question time over a chat of ``messages`` messages (in-memory index):
    ``search``: the terms' counts and the BM25 search; ``find``: all of recall's work for a
    new question (the new messages indexed, the search, the excerpts picked and counted with
    the offline tokenizer). Milliseconds, median and worst of ``queries``."""
    corpus = _chat_corpus(messages, seed)
    rng = random.Random(seed + 1)
    conv = Conversation(messages=corpus)
    index = RecallIndex(None)
    started = time.perf_counter()
    index.sync(conv.messages)
    build_s = time.perf_counter() - started
    counter = TokenCounter(CountingBackend())
    counter.text("warm the tokenizer")
    recall = Recall(counter, lambda _c: index)
    recall.find(conv, corpus[-1], [], -1, 500)  # the chat as opened: indexed, mapped
    search_ms: list[float] = []
    find_ms: list[float] = []
    found = 0
    for _ in range(queries):
        source = rng.choice(corpus).content.split()
        words = rng.sample(source, min(4, len(source)))
        question = Message(role="user", content=f"What did we say about {' and '.join(words)}?")
        conv.messages.append(question)  # a new question, as the chat goes on
        t0 = time.perf_counter()
        block = recall.find(conv, question, [], -1, 500)
        t1 = time.perf_counter()
        terms = distinctive(query_terms(question.content), index)
        if terms:
            index.search(match_expression(terms), limit=SEARCH_LIMIT)
        t2 = time.perf_counter()
        conv.messages.append(Message(role="assistant", content="Noted."))
        find_ms.append((t1 - t0) * 1000)
        search_ms.append((t2 - t1) * 1000)
        found += block is not None
    index.close()
    return {
        "messages": messages,
        "passages": index.passages,
        "index_build_s": round(build_s, 2),
        "search_ms_median": round(median(search_ms) or 0.0, 2),
        "search_ms_max": round(max(search_ms), 2),
        "find_ms_median": round(median(find_ms) or 0.0, 2),
        "find_ms_p95": round(sorted(find_ms)[int(0.95 * (len(find_ms) - 1))], 2),
        "find_ms_max": round(max(find_ms), 2),
        "queries": queries,
        "with_excerpts": found,
    }
