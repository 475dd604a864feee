"""``python -m assistant probe [MODEL]``: measure how much of its window a model uses well.

Runs :func:`~assistant.llm.context_probe.probe_effective_context` (a few minutes) with the
window the app would give it and keeps the result in the cache folder for the app."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from assistant.config import Settings, load_settings
from assistant.llm.base import LLMError
from assistant.llm.context_probe import (
    DEFAULT_DEPTHS,
    DEFAULT_SIZES,
    DEFAULT_TRIALS,
    EffectiveContextStore,
    probe_effective_context,
    store_key,
)
from assistant.llm.registry import registered_context
from assistant.llm.tool_score import ToolScoreStore
from assistant.tool_probe import TASKS


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"sizes are whole numbers: {text!r}") from exc
    if not sizes or min(sizes) < 64:
        raise argparse.ArgumentTypeError("give sizes of at least 64 tokens, e.g. 1024,4096")
    return sizes


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="assistant probe", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument("model", nargs="?", help="registry name or GGUF path (default: settings)")
    parser.add_argument(
        "--sizes", type=_sizes, default=DEFAULT_SIZES,
        help="prompt sizes in tokens, comma separated (default 1024,2048,4096,8192; sizes "
        "above the window are skipped)",
    )
    parser.add_argument(
        "--trials", type=int, default=DEFAULT_TRIALS, choices=range(1, 6),
        help=f"questions per depth and size (default {DEFAULT_TRIALS})",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tools", action="store_true",
        help="measure tool use instead: a few small file tasks in a temporary workspace, "
        "scored on the answers and the files (decides whether the model is offered tools)",
    )
    args = parser.parse_args(argv)
    out = out or sys.stdout
    settings = load_settings().settings
    model = args.model or settings.model
    if args.tools:
        return _probe_tools(model, settings, out)
    # The window the app loads it with.
    window = settings.effective_policy(registered_context(model)).window
    from assistant.llm.llama_backend import LlamaBackend

    try:
        backend = LlamaBackend.load(model, n_ctx=window, threads=settings.sampling.threads)
    except LLMError as exc:
        out.write(f"error: {exc}\n")
        return 1
    try:
        info = backend.info
        out.write(
            f"probing {info.name} (window {info.context_window:,}): sizes "
            f"{', '.join(f'{s:,}' for s in args.sizes)}, depths "
            f"{', '.join(str(d) for d in DEFAULT_DEPTHS)}, {args.trials} per depth\n"
        )
        out.flush()

        def progress(line: str) -> None:
            out.write(line + "\n")
            out.flush()

        try:
            result = probe_effective_context(
                backend, args.sizes, trials=args.trials, seed=args.seed, progress=progress
            )
        except (LLMError, ValueError) as exc:
            out.write(f"error: {exc}\n")
            return 1
        store = EffectiveContextStore()
        store.put(store_key(info), result)
    finally:
        backend.close()
    out.write(
        f"{info.name}: effective context {result.describe()}; window {result.window:,}; "
        f"{result.seconds:.0f} s; kept in {store.path}\n"
    )
    return 0


def _probe_tools(model: str, settings: Settings, out: TextIO) -> int:
    """``--tools``: run the tool-use probe with the window the app gives the model."""
    from assistant.llm.llama_backend import LlamaBackend
    from assistant.tool_probe import TaskOutcome, probe_tool_use

    window = settings.effective_policy(registered_context(model)).window
    try:
        backend = LlamaBackend.load(model, n_ctx=window, threads=settings.sampling.threads)
    except LLMError as exc:
        out.write(f"error: {exc}\n")
        return 1
    out.write(f"tool use of {backend.info.name}: {len(TASKS)} file tasks\n")
    out.flush()

    def progress(outcome: TaskOutcome) -> None:
        mark = "done" if outcome.passed else f"not done: {outcome.why}"
        calls = ", ".join(outcome.calls) or "no tool call"
        said = " ".join(outcome.answer.split())[:160]
        out.write(f"{outcome.name}: {mark} ({calls}; {outcome.seconds:.0f} s); "
                  f"answer: {said!r}\n")
        out.flush()

    try:
        score = probe_tool_use(backend, settings, progress=progress)
    finally:
        backend.close()
    store = ToolScoreStore()
    store.put(score)
    verdict = "offered the tools" if score.offers_tools else "offered no tools"
    out.write(f"{backend.info.name}: {score.describe()}; {verdict}; {score.seconds:.0f} s; "
              f"kept in {store.path}\n")
    return 0
