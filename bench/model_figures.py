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
import time
from typing import Any

from assistant.config import DEFAULT_SYSTEM_PROMPT
from assistant.llm.base import GenerationOptions, GenerationResult
from assistant.llm.registry import load_registry, model_path

SHORT_QUESTION = "What does a Python list comprehension do? One sentence."


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


def measure(name: str, *, paste: int = 4_000, history: int = 4_000, reply: int = 32,
            threads: int = 0) -> dict[str, Any]:
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
        resumed = resume_ttft(backend, load, history=history)
    finally:
        backend.close()
    return {
        "model": name, "window": window, "load_s": round(load_s, 2),
        "short_ttft_s": round(short_ttft, 2), "short_prompt_tokens": short.prompt_tokens,
        "decode_tps": round(_decode_rate(short), 2), "decode_tokens": short.completion_tokens,
        "paste_ttft_s": round(paste_ttft, 2), "paste_prompt_tokens": pasted.prompt_tokens,
        "resume_ttft_s": resumed["resume_ttft_s"], "live_ttft_s": resumed["live_ttft_s"],
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
        "pasted text, of a question in a resumed chat (its saved state loaded; before "
        "quitting: the same question in the chat never closed); decode tokens/s after the "
        "first token; the peak resident memory of the process that held the model.",
        "",
        "| model | short question | pasted text | resumed chat | before quitting "
        "| decode tok/s | peak memory |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['error']} | | | | | |")
            continue
        lines.append(
            f"| {r['model']} | {r['short_ttft_s']} | {r['paste_ttft_s']} "
            f"({r['paste_prompt_tokens']:,} tokens) | {r['resume_ttft_s']} "
            f"({r['resume_history_tokens']:,} tokens) | {r['live_ttft_s']} | "
            f"{r['decode_tps']} | {r['peak_rss_mb']:,} MB |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.model_figures NAME``: one model's figures as one JSON line."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m bench.model_figures")
    p.add_argument("model")
    p.add_argument("--paste", type=int, default=4_000)
    p.add_argument("--history", type=int, default=4_000)
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args(argv)
    print(json.dumps(measure(args.model, paste=args.paste, history=args.history,
                             threads=args.threads)))
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process of run_all
    raise SystemExit(main())
