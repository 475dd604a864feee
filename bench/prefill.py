"""Prompt evaluation measurements: in-app prefill against raw llama.cpp, and a reopened chat.

* :func:`prefill_speed` - the app's prompt evaluation (``LlamaBackend.generate_tokens``
  from an empty cache: its prefill in ``n_batch`` pieces with cancel checks and progress)
  against raw llama.cpp (``llama_decode`` on the same tokens in a fresh context, nothing in
  between) with the same settings, and raw llama.cpp with llama.cpp's usual settings (all
  logical CPUs, 512/512) to show what the calibration chose. Reps alternate; medians.
* :func:`raw_prefill_rate` - raw llama.cpp tokens/s of a model, the rate the TTFT bound of
  each turn is computed with.
* :func:`resume_ttft` - a chat with ``history`` tokens is answered, its KV state saved as the
  app saves it, the question asked in the chat never closed (before quitting), and the chat
  "reopened" twice: by a new backend evaluating everything
  (before issue 14) and by a new backend that loads the saved state first. Time to first
  token of a new question in each, the state's size and save/load times.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assistant.config import DEFAULT_SYSTEM_PROMPT
from assistant.llm.base import GenerationResult
from assistant.llm.calibration import logical_cpus
from assistant.llm.kv_state import StateCache
from assistant.llm.llama_backend import LlamaBackend
from assistant.llm.llama_kv import PrefillConfig

from .metrics import median
from .micro import greedy_call

_TOPICS = (
    "the lighthouse keeper's logbook", "tidal charts of the northern bay",
    "the repair of a diesel generator", "a recipe for fish stew", "migrating seabirds",
    "the history of the harbour", "knots used by sailors", "storm warnings in winter",
)


def _filler_turn(i: int, words: int) -> str:
    topic = _TOPICS[i % len(_TOPICS)]
    body = " ".join(
        f"Note {i}.{k}: about {topic}, item {k * 7 % 97} was checked at {k % 24:02d}:00 and "
        f"found {'in order' if k % 3 else 'worn'}."
        for k in range(max(1, words // 20))
    )
    return f"Here are my notes on {topic}. {body}"


def history_messages(backend: LlamaBackend, tokens: int) -> list[dict[str, Any]]:
    """A chat of user notes and short assistant answers of about ``tokens`` tokens."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": DEFAULT_SYSTEM_PROMPT}]
    i = 0
    while backend.count_prompt(msgs) < tokens - 200:
        msgs.append({"role": "user", "content": _filler_turn(i, 300)})
        msgs.append({"role": "assistant", "content": f"Noted: {_TOPICS[i % len(_TOPICS)]}."})
        i += 1
    return msgs


def _chat(backend: LlamaBackend, msgs: list[dict[str, Any]], max_tokens: int
          ) -> GenerationResult:
    return greedy_call(backend, backend.tokenize_prompt(backend.render_prompt(msgs)), max_tokens)


def _timed_chat(backend: LlamaBackend, msgs: list[dict[str, Any]], max_tokens: int
                ) -> tuple[GenerationResult, float]:
    """The result and the time to its first token, rendering and tokenizing included."""
    t0 = time.perf_counter()
    tokens = backend.tokenize_prompt(backend.render_prompt(msgs))
    ready = time.perf_counter() - t0
    result = greedy_call(backend, tokens, max_tokens)
    return result, ready + (result.first_token_s or result.prefill_s)


def raw_new_tokens_s(backend: LlamaBackend, msgs: list[dict[str, Any]], new: int
                     ) -> float | None:
    """Seconds raw ``llama_decode`` takes for the last ``new`` tokens of ``msgs``' prompt with
    the rest already in its cache (a temporary context: the chat's is not touched), i.e. the
    physical floor of a first token that evaluates only the new tokens."""
    tokens = backend.tokenize_prompt(backend.render_prompt(msgs))
    if not 0 < new < len(tokens):
        return None
    return backend.raw_prefill(tokens, piece=len(tokens) - new)[-1][1]


def _raw_rate(
    backend: LlamaBackend, tokens: list[int], config: PrefillConfig | None = None
) -> float:
    """Tokens per second of raw ``llama_decode`` on ``tokens`` (``LlamaBackend.raw_prefill``)."""
    elapsed = sum(seconds for _n, seconds in backend.raw_prefill(tokens, config))
    return len(tokens) / elapsed if elapsed > 0 else 0.0


def raw_prefill_rate(backend: LlamaBackend, tokens: int = 512, reps: int = 2) -> float:
    """Raw llama.cpp prompt tokens/s of ``backend``'s model with its settings."""
    probe = backend.tokenize(backend.render_prompt(history_messages(backend, tokens + 200)))
    probe = probe[:tokens]
    rates = [_raw_rate(backend, probe) for _ in range(reps)]
    return median(rates) or 0.0


def raw_prefill_curve(
    backend: LlamaBackend, tokens: int, piece: int = 512, reps: int = 2
) -> list[list[float]]:
    """Raw llama.cpp prompt tokens/s of ``backend``'s model by context depth: a prompt of
    ``tokens`` tokens decoded from an empty cache in pieces of ``piece``; [depth, tokens/s]
    of each piece (median of ``reps`` passes). Evaluating new tokens after a cached prefix
    costs what the piece at that depth costs: the TTFT bound of a turn deep in a chat uses
    these rates, not the rate of an empty context."""
    probe = backend.tokenize(backend.render_prompt(history_messages(backend, tokens + 300)))
    probe = probe[:tokens]
    passes = [backend.raw_prefill(probe, piece=piece) for _ in range(reps)]
    curve: list[list[float]] = []
    for i in range(len(passes[0])):
        rates = [p[i][0] / p[i][1] for p in passes if p[i][1] > 0]
        curve.append([float(i * piece), round(median(rates) or 0.0, 2)])
    return curve


def prefill_speed(backend: LlamaBackend, *, prompt_tokens: int = 2_000, reps: int = 3
                  ) -> dict[str, Any]:
    """In-app prefill vs raw llama.cpp on the same prompt (see the module docstring)."""
    msgs = history_messages(backend, prompt_tokens + 300)
    tokens = backend.tokenize(backend.render_prompt(msgs))[:prompt_tokens]
    config = backend.prefill_config
    default = PrefillConfig(logical_cpus(), 512, 512)
    app: list[float] = []
    raw: list[float] = []
    raw_default: list[float] = []
    for _ in range(reps):
        backend.reset_kv_cache()
        res = greedy_call(backend, tokens, 1)
        if res.prefill_s > 0:
            app.append((len(tokens) - 1) / res.prefill_s)  # the last token comes with the reply
        raw.append(_raw_rate(backend, tokens[:-1], config))
        if default != config:
            raw_default.append(_raw_rate(backend, tokens[:-1], default))
    backend.reset_kv_cache()
    app_tps, raw_tps = median(app) or 0.0, median(raw) or 0.0
    cal = backend.calibration
    return {
        "prompt_tokens": len(tokens),
        "reps": reps,
        "config": config.describe(),
        "app_tps": round(app_tps, 2),
        "raw_tps": round(raw_tps, 2),
        "ratio": round(app_tps / raw_tps, 4) if raw_tps else None,
        "default_config": default.describe(),
        "raw_default_tps": round(median(raw_default) or raw_tps, 2),
        "calibration": None if cal is None else {
            "seconds": round(cal.seconds, 2), "prompt_tokens": cal.prompt_tokens,
            "trials": cal.trials, "chosen": cal.config.describe(),
        },
    }


def resume_ttft(
    backend: LlamaBackend,
    reload: Callable[[], LlamaBackend],
    *,
    history: int = 6_000,
    raw_tps: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Time to first token of a question in a reopened chat of ``history`` tokens, with
    and without its saved state (see the module docstring)."""
    say = progress or (lambda _t: None)
    msgs = history_messages(backend, history)
    backend.reset_kv_cache()
    say(f"resume: answering a {history:,}-token chat ...")
    first = _chat(backend, msgs, 16)
    started = time.perf_counter()
    state = backend.save_state()
    copy_s = time.perf_counter() - started
    msgs2 = [*msgs, {"role": "assistant", "content": first.text},
             {"role": "user", "content": "Which topic did my notes cover first?"}]
    # The chat never closed (the question before quitting): the same backend answers,
    # reusing its cache.
    live, live_ttft = _timed_chat(backend, msgs2, 8)
    raw_new = raw_new_tokens_s(backend, msgs2, live.prompt_evaluated)
    with tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp:
        cache = StateCache(Path(tmp), limit_bytes=1 << 40)
        started = time.perf_counter()
        path = cache.save("chat", state)
        write_s = time.perf_counter() - started
        size = path.stat().st_size if path is not None else 0
        say("resume: reopened without a saved state ...")
        cold_backend = reload()
        try:
            cold, cold_ttft = _timed_chat(cold_backend, msgs2, 8)
        finally:
            cold_backend.close()
        say("resume: reopened with its saved state ...")
        warm_backend = reload()
        try:
            t0 = time.perf_counter()
            loaded = cache.load("chat", warm_backend.state_fingerprint())
            if loaded is None:
                raise RuntimeError(f"the saved state did not load: {cache.last_miss}")
            warm_backend.load_state(loaded)
            restore_s = time.perf_counter() - t0
            warm, warm_ttft = _timed_chat(warm_backend, msgs2, 8)
            warm_ttft += restore_s
        finally:
            warm_backend.close()
    own = warm.prompt_evaluated / raw_tps if raw_tps else None
    return {
        "history_tokens": first.prompt_tokens,
        "prompt_tokens": warm.prompt_tokens,
        "state_tokens": len(state.tokens),
        "state_mb": round(size / 1e6, 1),
        "copy_s": round(copy_s, 3),
        "write_s": round(write_s, 3),
        "restore_s": round(restore_s, 3),
        "cold_ttft_s": round(cold_ttft, 2),
        "cold_evaluated": cold.prompt_evaluated,
        "resume_ttft_s": round(warm_ttft, 2),
        "live_ttft_s": round(live_ttft, 2),
        "live_evaluated": live.prompt_evaluated,
        "raw_new_s": None if raw_new is None else round(raw_new, 3),
        "resume_evaluated": warm.prompt_evaluated,
        "question_own_s": None if own is None else round(own, 2),
        # Restored, the cache is the one the chat left: the reply is the live one's. A full
        # evaluation rounds differently (batches instead of one token at a time), so its
        # greedy reply may differ on a tiny model.
        "same_reply_as_live": live.text == warm.text,
        "same_reply": cold.text == warm.text,
    }
