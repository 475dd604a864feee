"""The per-model figures (``python -m bench --model-figures``, in ``make bench``): for every
registered model whose file is installed, time to first token for a short question, for a
pasted text of ``paste`` tokens and for a resumed chat of ``history`` tokens (its saved state
loaded, and the same question in the chat never closed), decode tokens/s, and the peak
resident memory of the process that held the model.

Each model is measured in a process of its own (``python -m bench.model_figures NAME``
prints its figures as JSON), so the peak memory is that model's alone.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import threading
import time
from typing import Any

from assistant.config import DEFAULT_SYSTEM_PROMPT
from assistant.llm.base import GenerationOptions, GenerationResult
from assistant.llm.registry import load_registry, model_path

SHORT_QUESTION = "What does a Python list comprehension do? One sentence."
#: Seconds the user types the question under a paste before sending it.
TYPING_S = 10.0


def paste_text(count: Any, tokens: int) -> str:
    """Code of about ``tokens`` tokens (``count``: the model's token counter) to paste."""
    lines: list[str] = []
    i = 0
    while True:
        block = [f"def step_{i}(value):", f"    return value * {i % 13} + {i % 7}  # {i}"]
        if lines and count("\n".join(lines + block)) > tokens:
            break
        lines += block
        i += 1
    return "\n".join(lines)


def _reply(backend: Any, msgs: list[dict[str, Any]], max_tokens: int
           ) -> tuple[GenerationResult, float]:
    """The result and the first token's time, rendering and tokenizing included."""
    started = time.perf_counter()
    tokens = backend.tokenize_prompt(backend.render_prompt(msgs))
    ready = time.perf_counter() - started
    result = None
    for event in backend.generate_tokens(tokens, GenerationOptions(max_tokens, temperature=0.0)):
        result = event.result or result
    assert result is not None
    return result, ready + (result.first_token_s or result.prefill_s)


def _decode_rate(result: GenerationResult) -> float:
    first = result.first_token_s or 0.0
    decode = result.prefill_s + result.generate_s - first
    return (result.completion_tokens - 1) / decode if decode > 0 else 0.0


def paste_read_ahead(backend: Any, system: dict[str, str], text: str, typing_s: float
                     ) -> tuple[float, int, int]:
    """The pasted text sent after ``typing_s`` seconds of typing the question under it, with
    the app's read-ahead (``Agent.read_ahead``: the draft's prompt read into the cache while
    the user types, stopped at the send): the first token's time after the send, the prompt
    tokens read ahead, and those the send still evaluated."""
    from assistant.llm.base import CancelToken

    typed = [system, {"role": "user", "content": f"{text}\n\nWhat does step_"}]
    cancel = CancelToken()
    done: list[Any] = []
    reader = threading.Thread(target=lambda: done.append(backend.warm(typed, cancel=cancel)))
    reader.start()
    reader.join(typing_s)
    cancel.cancel()
    reader.join()
    read = done[0].evaluated if done else 0
    result, ttft = _reply(backend, [system, {"role": "user", "content":
                                             f"{text}\n\nWhat does step_12 do?"}], 8)
    return ttft, read, result.prompt_evaluated


def measure(name: str, *, paste: int = 4_000, history: int = 4_000, reply: int = 32,
            threads: int = 0, typing_s: float = TYPING_S) -> dict[str, Any]:
    """One model's figures (run in a process of its own: see the module docstring)."""
    from assistant.llm.llama_backend import LlamaBackend

    from .prefill import resume_ttft

    window = max(paste, history) + 1_024

    def load() -> Any:
        return LlamaBackend.load(name, n_ctx=window, threads=threads, calibrate=True)

    started = time.perf_counter()
    backend = load()
    load_s = time.perf_counter() - started
    system = {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    try:
        short, short_ttft = _reply(backend, [system, {"role": "user", "content":
                                                      SHORT_QUESTION}], reply)
        backend.reset_kv_cache()
        text = paste_text(backend.count, paste)
        pasted, paste_ttft = _reply(backend, [system, {"role": "user", "content":
                                                       f"{text}\n\nWhat does step_12 do?"}], 8)
        backend.reset_kv_cache()
        ahead_ttft, ahead_read, ahead_left = paste_read_ahead(backend, system, text, typing_s)
        resumed = resume_ttft(backend, load, history=history)
    finally:
        backend.close()
    return {
        "model": name, "window": window, "load_s": round(load_s, 2),
        "short_ttft_s": round(short_ttft, 2), "short_prompt_tokens": short.prompt_tokens,
        "decode_tps": round(_decode_rate(short), 2), "decode_tokens": short.completion_tokens,
        "paste_ttft_s": round(paste_ttft, 2), "paste_prompt_tokens": pasted.prompt_tokens,
        "ahead_ttft_s": round(ahead_ttft, 2), "ahead_read_tokens": ahead_read,
        "ahead_evaluated": ahead_left, "paste_evaluated": pasted.prompt_evaluated,
        "typing_s": typing_s,
        "resume_ttft_s": resumed["resume_ttft_s"], "live_ttft_s": resumed["live_ttft_s"],
        "live_evaluated": resumed["live_evaluated"], "raw_new_s": resumed["raw_new_s"],
        "resume_history_tokens": resumed["history_tokens"],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def installed_models() -> list[str]:
    """Every registered model whose file is on this machine, in the registry's order."""
    return [e.name for e in load_registry().models if model_path(e).exists()]


def run_all(models: list[str], *, paste: int, history: int, threads: int = 0
            ) -> list[dict[str, Any]]:
    """Each model's :func:`measure` in a child process; a failure is kept as its error."""
    out: list[dict[str, Any]] = []
    for name in models:
        cmd = [sys.executable, "-m", "bench.model_figures", name, "--paste", str(paste),
               "--history", str(history), "--threads", str(threads)]
        print(f"bench: model figures of {name} ...", file=sys.stderr)
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        try:
            out.append(json.loads(done.stdout.strip().splitlines()[-1]))
        except (IndexError, ValueError):
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            out.append({"model": name, "error": f"exit {done.returncode}: {tail}"})
    return out


def render(rows: list[dict[str, Any]], command: str) -> str:
    """A markdown table of the figures."""
    lines = [
        "### Per-model figures",
        "",
        f"`{command}`: time to first token (s) of a short question (empty cache), of a "
        "pasted text (sent at once; and after typing the question under it for "
        f"{TYPING_S:g} s while the app reads ahead), of a question in a resumed chat (its "
        "saved state loaded; before "
        "quitting: the same question in the chat never closed); decode tokens/s after the "
        "first token; the peak resident memory of the process that held the model.",
        "",
        "| model | short question | pasted text | pasted, read ahead | resumed chat "
        "| before quitting | raw llama.cpp, new tokens only | decode tok/s | peak memory |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['error']} | | | | | | | |")
            continue
        lines.append(
            f"| {r['model']} | {r['short_ttft_s']} | {r['paste_ttft_s']} "
            f"({r['paste_prompt_tokens']:,} tokens) | {_ahead(r)} | {r['resume_ttft_s']} "
            f"({r['resume_history_tokens']:,} tokens) | {r['live_ttft_s']} | {_raw(r)} | "
            f"{r['decode_tps']} | {r['peak_rss_mb']:,} MB |"
        )
    return "\n".join(lines) + "\n"


def _raw(r: dict[str, Any]) -> str:
    """Raw llama.cpp evaluating only the question's new tokens, and the app's ratio to it."""
    raw = r.get("raw_new_s")
    if not raw:
        return ""
    return f"{raw} ({r['live_evaluated']:,} tokens; app {r['live_ttft_s'] / raw:.2f}x)"


def _ahead(r: dict[str, Any]) -> str:
    """The read-ahead cell: its first token, how many times sooner, the tokens read ahead."""
    if "ahead_ttft_s" not in r:
        return ""
    ahead = r["ahead_ttft_s"]
    sooner = f", {r['paste_ttft_s'] / ahead:.1f}x sooner" if ahead > 0 else ""
    return f"{ahead} ({r['ahead_read_tokens']:,} read ahead{sooner})"


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.model_figures NAME``: one model's figures as one JSON line."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m bench.model_figures")
    p.add_argument("model")
    p.add_argument("--paste", type=int, default=4_000)
    p.add_argument("--history", type=int, default=4_000)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--typing", type=float, default=TYPING_S)
    args = p.parse_args(argv)
    print(json.dumps(measure(args.model, paste=args.paste, history=args.history,
                             threads=args.threads, typing_s=args.typing)))
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process of run_all
    raise SystemExit(main())
