"""Focused measurements beside the workloads.

* :func:`generation_speed` - tokens per second of the app's streaming path
  (``LlamaBackend.generate_tokens``: detokenize, stop strings, cancel checks) against raw
  ``Llama.generate`` on the same prompt tokens, same sampler, same cached prefix. Reps
  alternate between the two; medians are reported.
* :func:`policy_time` - the controller's per-call work at a full local window (10,000
  tokens), through :func:`bench.measure.measure_policy` with the model's own
  tokenizer.
* :func:`summary_time` - one compaction of a full local window written by the model
  (:func:`bench.measure.summary_prefill`), with the chat cached as in the
  app and, optionally, with nothing cached.

The raw side is :meth:`LlamaBackend.raw_generation_seconds`; for other backends
:func:`generation_speed` returns None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assistant.config import DEFAULT_SYSTEM_PROMPT, default_local
from assistant.llm.base import GenerationOptions, GenerationResult, KVCacheAware, LLMBackend
from assistant.llm.llama_backend import LlamaBackend

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
    pol = default_local().effective("local", None)
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
