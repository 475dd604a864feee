"""Which transcripts and models the answer benchmark runs (``python -m bench``'s answers step).

Every workload of the run and every real session found (a copy found twice is replayed
once, :func:`bench.real_sessions.find_sessions`) is asked with each model: by default the
registry's default model (SmolLM2-135M) and ``gemma-3-270m`` when provisioned. The quick
run asks :data:`QUICK_QUESTIONS` questions per transcript of SmolLM2 with the code-written
record only, with and without recall, and the rolling window (:data:`QUICK_VARIANTS`) (the
model-written summaries of a 123,000-token session take many minutes on 2 cores); the full run
asks :data:`FULL_QUESTIONS` and every variant. Every run asks the rolling window
(:mod:`bench.rolling`) beside the app's variants. The long personal chats
(:mod:`bench.personal_chats`) are asked too: :data:`PERSONAL_CHATS` of them in a full run, the
ones ``SuiteOptions.personal`` names otherwise.

Each model is loaded once, with a context of ``min(trained window, max(the mode's window,
ORACLE_CONTEXT))`` so that oracle (ii) can be given the whole history where it fits (the
policy still uses the mode's window: it reads the trained window, not the loaded one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from assistant.config import Settings
from assistant.llm.base import LLMBackend, LLMError

from .answers import (
    Transcript,
    TranscriptRun,
    run_transcript,
    session_transcript,
    workload_transcript,
)
from .personal_chats import personal_transcript
from .questions import QuestionsError
from .real_sessions import find_sessions
from .rolling import ROLLING_WINDOW
from .strategies import DEFAULT_ANSWER_STRATEGIES, AnswerStrategy
from .workloads import Workload

log = logging.getLogger("bench")

FULL_QUESTIONS = 48
QUICK_QUESTIONS = 4
#: Largest context a model is loaded with for oracle (ii) (bounds memory and time).
ORACLE_CONTEXT = 16_384
DEFAULT_MODELS = ("smollm2-135m-instruct", "gemma-3-270m")
#: Personal chats a full run asks (seeds ``--seed`` on); the quick run asks none by default.
PERSONAL_CHATS = 2
#: The quick run's small version: the embedded model, and the two variants that differ in
#: the quick windows (no model summary fits there: the model-summary variants ask nothing
#: the record variants do not, so they would only double the time).
QUICK_MODELS = ("smollm2-135m-instruct",)
QUICK_VARIANTS: tuple[AnswerStrategy, ...] = ("record", "record+recall", ROLLING_WINDOW)

Loader = Callable[[str, int], LLMBackend]


@dataclass
class SuiteOptions:
    quick: bool
    models: Sequence[str] = DEFAULT_MODELS
    variants: Sequence[AnswerStrategy] = DEFAULT_ANSWER_STRATEGIES
    questions: int | None = None
    oracle_context: int = ORACLE_CONTEXT
    #: Prompt sizes to keep within (each its own run of every transcript); None: the mode's
    #: window (a quick workload's own cap still applies).
    windows: Sequence[int | None] = (None,)
    #: Ask oracle (ii) (the whole history, where it fits the trained window).
    history_oracle: bool = True
    #: Seeds of the long personal chats asked (bench.personal_chats).
    personal: Sequence[int] = ()


def capped(t: Transcript, window: int | None) -> Transcript:
    """``t`` with its prompts kept within ``window`` tokens (its own cap when smaller), named
    ``"W2 @2048"``; ``t`` itself when ``window`` is None."""
    if window is None:
        return t
    cap = window if t.window_cap is None else min(window, t.window_cap)
    return replace(t, name=f"{t.name} @{window}", window_cap=cap)


def with_rolling(variants: Sequence[AnswerStrategy]) -> list[AnswerStrategy]:
    """``variants`` and the rolling window (every run reports it beside the app's)."""
    out = list(variants)
    return out if ROLLING_WINDOW in out else [*out, ROLLING_WINDOW]


def trained_window(name: str) -> int | None:
    """The registry's trained window of model ``name`` (None: not a registered model)."""
    from assistant.llm.registry import registered_context

    return registered_context(name)


def model_missing(name: str) -> str | None:
    """Why model ``name`` cannot be used (None: its file is there)."""
    from assistant.llm.registry import resolve_model

    path, _entry = resolve_model(name)
    return None if path.exists() else f"model {name} not found at {path}"


def run_suite(
    workloads: Sequence[Workload],
    sessions: Sequence[Path],
    options: SuiteOptions,
    load: Loader,
    *,
    progress: Callable[[str], None],
    notes: list[str],
    on_run: Callable[[TranscriptRun], None] | None = None,
) -> list[TranscriptRun]:
    """Ask every transcript with every model; a failing one becomes a note. ``on_run``
    hears of each finished transcript (so a long run can save what it has)."""
    limit = options.questions or (QUICK_QUESTIONS if options.quick else FULL_QUESTIONS)
    runs: list[TranscriptRun] = []
    found = [workload_transcript(wl, limit=limit) for wl in workloads]
    for path in find_sessions([p for p in sessions if p.is_dir()]) + [
        p for p in sessions if p.is_file()
    ]:
        try:
            found.append(session_transcript(path, limit=limit))
        except (QuestionsError, OSError, ValueError) as exc:
            notes.append(f"answers: real session {path.name} left out: {exc}")
    found += [personal_transcript(seed, limit=limit) for seed in options.personal]
    transcripts = [capped(t, w) for t in found for w in options.windows]
    for name in options.models:
        trained = trained_window(name) if name != "scripted" else None
        for t in transcripts:
            mode_window = Settings(mode=t.mode).policy().window
            n_ctx = max(mode_window, options.oracle_context)
            if trained is not None:
                n_ctx = min(n_ctx, trained)
            try:
                backend = load(name, n_ctx)
            except LLMError as exc:
                notes.append(f"answers: {name} could not be loaded: {exc}")
                break
            variants = with_rolling(options.variants)
            if options.quick and t.kind == "real session":
                variants = [v for v in variants if v in QUICK_VARIANTS] or variants[:1]
            reset = getattr(backend, "reset_kv_cache", None)
            if callable(reset):
                reset()
            progress(f"answers: {t.name} ({len(t.questions)} questions) with "
                     f"{', '.join(variants)} on {name} ...")
            try:
                runs.append(run_transcript(backend, t, variants, model_label=name,
                                           progress=progress,
                                           history_oracle=options.history_oracle))
                if on_run is not None:
                    on_run(runs[-1])
            except Exception as exc:  # one transcript failing must not lose the others
                log.exception("answer benchmark failed")
                notes.append(f"answers: {t.name} on {name} failed: {type(exc).__name__}: {exc}")
    return runs
