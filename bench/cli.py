# Over 500 lines: every flag of `python -m bench` and the order its sections run in.
"""``python -m bench``: run workloads x strategies and report.

    python -m bench [--workload NAME ...] [--strategy NAME ...]
                              [--model embedded|PATH|scripted] [--quick] [--json]
                              [--report PATH] [--seed N] [--save-workloads DIR]
                              [--engine embedded|server]

``--model embedded`` (default) runs W1-W3 on the registry's default model and W4 on
``gemma-3-270m`` (skipped with a note when that model is not provisioned); a PATH runs every
workload on that GGUF file; ``scripted`` runs the pipeline on the test double (canned
replies, cl100k counts, no model: a fast dry run of the benchmark itself). Model runs happen
one at a time in this process. Progress goes to stderr, the result to stdout (a text table,
or JSON with ``--json``); ``--report`` writes the markdown and plots (``make bench``).
``--engine server`` also runs one pair (W1 with the policy, when they are in the run; else
the first workload and strategy) through llama-cpp-python's OpenAI-compatible server on
loopback with the same model and compares the two engines per call (:mod:`.engines`).

Why it is long (about 460 lines): the command's options, model loading, checkpoints and
resume, and the micro measurements are all steps of the one ``bench`` run, in order.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from assistant.config import Mode, Settings
from assistant.llm.base import KVCacheAware, LLMBackend, LLMError

from .answers import TranscriptRun
from .engines import compare, run_on_server
from .metrics import RunRecord
from .micro import generation_speed, policy_time, recall_time, summary_time
from .real_sessions import default_folders, find_sessions, run_real_session
from .report import (
    BenchResult,
    WorkloadInfo,
    from_json,
    render_markdown,
    to_json,
    write_report,
)
from .runner import RunOptions, run_workload
from .strategies import (
    ANSWER_VARIANTS,
    DEFAULT_ANSWER_STRATEGIES,
    LABELS,
    STRATEGY_NAMES,
    StrategyName,
    canonical_strategy,
)
from .workloads import (
    LOCAL_WINDOW,
    STANDARD_WINDOW,
    WORKLOAD_NAMES,
    ToolStep,
    Workload,
    canonical_name,
    generate,
    load_workload,
)

EXIT_USAGE = 2
W4_MODEL = "gemma-3-270m"
#: ``--side-by-side``'s workloads when none is named, and its questions per workload with
#: ``--quick`` (the full run asks them all).
SIDE_BY_SIDE_WORKLOADS = ("W1", "W2")
SIDE_BY_SIDE_QUICK_QUESTIONS = 8
SCRIPTED_REPLY = "Here is a short answer about what you asked, keeping to your rules."


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark context strategies on deterministic workloads.",
    )
    p.add_argument("--workload", action="append", metavar="NAME",
                   help="W1, W2, W3, W4 (or a saved NAME.jsonl); repeatable; default all")
    p.add_argument("--strategy", action="append", metavar="NAME",
                   help=f"{', '.join(STRATEGY_NAMES)} (or a-e); repeatable; default all")
    p.add_argument("--model", default="embedded",
                   help="embedded (default), a GGUF path, or scripted (no model)")
    p.add_argument("--quick", action="store_true", help="small workloads (a few minutes)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--report", type=Path, metavar="PATH",
                   help="write a markdown report there (plots in PATH's dir/bench/)")
    p.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    p.add_argument("--threads", type=int, default=0, help="llama threads (0: automatic)")
    p.add_argument("--max-reply-tokens", type=int, default=None,
                   help="cap on each chat reply (default 48, or 24 with --quick)")
    p.add_argument("--no-questions", action="store_true",
                   help="skip asking the planted facts at the end")
    p.add_argument("--no-micro", action="store_true",
                   help="skip the speed, policy-time and summary-time measurements")
    p.add_argument("--save-workloads", type=Path, metavar="DIR",
                   help="also save the workloads as JSONL (+ .facts.json) in DIR")
    p.add_argument("--generate-only", action="store_true",
                   help="only generate (and with --save-workloads save) the workloads")
    p.add_argument("--rerender", type=Path, action="append", metavar="RESULTS_JSON",
                   help="write --report from saved results-*.json files (repeatable) "
                   "without running anything")
    p.add_argument("--checkpoint", type=Path, metavar="JSON",
                   help="save results there after every run (default with --report: "
                   "REPORT_DIR/bench/results-KIND.json)")
    p.add_argument("--resume", type=Path, metavar="JSON",
                   help="continue a saved run: skip the workload/strategy pairs it has")
    p.add_argument("--verbose", action="store_true", help="show the app's log on stderr")
    p.add_argument("--engine", choices=["embedded", "server"], default="embedded",
                   help="server: also run W1 with the policy (else the first pair) through a "
                   "local OpenAI-compatible server (llama-cpp-python) with the same model and "
                   "compare time to first token and tokens/s")
    p.add_argument("--real-session", type=Path, action="append", metavar="PATH",
                   help="a real session (JSONL with a .facts.json beside it) or a folder of "
                        "them to replay through each strategy (default: tests/data/"
                        "real-sessions and ../shared/real-sessions when present; with "
                        "--answers-only and no --workload, only the sessions are asked)")
    p.add_argument("--no-real-sessions", action="store_true",
                   help="skip the real-session replays")
    p.add_argument("--chunk-reuse", action="store_true",
                   help="run with chunk reuse on (cached text after a pruned or summarized "
                   "span is moved, not evaluated again); with --side-by-side, one more run "
                   "of the embedded engine with it on")
    p.add_argument("--no-reuse-quality", action="store_true",
                   help="skip measuring chunk reuse against full evaluation on the policy's "
                   "calls")
    p.add_argument("--reuse-positions", type=int, default=200, metavar="N",
                   help="positions the chunk-reuse quality covers at least (default 200)")
    p.add_argument("--resume-history", type=int, default=None, metavar="TOKENS",
                   help="history of the reopened chat measured (default 6000, 1500 quick)")
    a = p.add_argument_group("answer benchmark (bench.answers)")
    a.add_argument("--no-answers", action="store_true", help="skip the answer benchmark")
    a.add_argument("--answers-only", action="store_true",
                   help="run only the answer benchmark (no strategy runs, real-session "
                   "instructions, micro or reuse measurements)")
    a.add_argument("--answer-model", action="append", metavar="NAME",
                   help="model asked (repeatable; default: smollm2-135m-instruct and "
                   "gemma-3-270m when provisioned, or --model's PATH)")
    a.add_argument("--answer-strategy", action="append", metavar="NAME",
                   choices=list(ANSWER_VARIANTS),
                   help=f"{', '.join(ANSWER_VARIANTS)} (repeatable; default all but "
                        "record+recall+notes; rolling-window is always asked)")
    a.add_argument("--questions", type=int, default=None, metavar="N",
                   help="questions per transcript (default 48, or 4 with --quick)")
    a.add_argument("--answers-report", type=Path, metavar="PATH",
                   help="also write the answer benchmark's section alone there (markdown)")
    a.add_argument("--answer-window", type=int, action="append", metavar="TOKENS",
                   help="keep the prompts within TOKENS (the compaction window capped there, as "
                   "a measured effective context does in the app); repeatable: each size is "
                   "its own run, named 'W2 @2048' (default: the mode's window)")
    a.add_argument("--personal-chats", type=int, default=None, metavar="N",
                   help="ask N long personal chats (bench/personal_chats.py, seeds --seed "
                   "on; default 2, none with --quick or --workload); with --answers-only and no "
                   "--workload, only they (and the sessions named) are asked")
    a.add_argument("--no-history-oracle", action="store_true",
                   help="do not ask oracle (ii) (the whole history; it prefills up to the "
                   "trained window once per ask point); oracle (i) is always asked")
    p.add_argument("--reuse-seam", type=int, action="append", metavar="N",
                   help="chunk-reuse quality: evaluate N tokens after each seam again instead "
                   "of moving them (default 0; repeat to compare several on the same calls, "
                   "the first is reported)")
    p.add_argument("--reuse-continuation", type=int, default=32, metavar="N",
                   help="chunk-reuse quality: positions compared per call (default 32)")
    p.add_argument("--side-by-side", action="store_true",
                   help="only run the workloads (default W1 and W2) three ways: the embedded "
                   "engine, the app driving llama-server, and llama-server --cache-reuse "
                   "with the front ends' front cut; ask the answer benchmark's questions "
                   "at the end of each (--questions N: at most N, default 8 with --quick, "
                   "else all); print the table (--report PATH: also put it in PATH's "
                   "engines section)")
    p.add_argument("--read-ahead", action="store_true",
                   help="--side-by-side: repeat the last embedded and llama-server policy runs "
                   "reading each message less its last word ahead (untimed) before its send")
    p.add_argument("--llama-server-wait", type=float, default=0.0, metavar="S",
                   help="--side-by-side: wait up to S seconds for the llama-server binary "
                   "(while make llama-server builds it)")
    p.add_argument("--speculative", action="store_true",
                   help="only measure prompt-lookup decoding on the quoting workload "
                   "(SmolLM2 and gemma-3-270m, or --model PATH) and print the table")
    p.add_argument("--draft", metavar="MAIN:DRAFT", default=None,
                   help="only measure draft-model decoding on W1's replies: MAIN (a registry "
                   "name or GGUF path) with and without DRAFT proposing tokens "
                   "(bench/draft.py); --quick: 2 prompts, 64 tokens")
    p.add_argument("--model-figures", action="store_true",
                   help="only measure every installed registered model's figures (first "
                   "token of a short question, a pasted text and a resumed chat; decode "
                   "tokens/s; peak memory: bench/model_figures.py); --quick: 1,000-token "
                   "paste and history instead of 4,000")
    return p


def _model_figures(args: argparse.Namespace) -> int:
    """``--model-figures``: the per-model figures (bench/model_figures.py)."""
    from . import model_figures

    models = (model_figures.installed_models() if args.model in ("embedded", "scripted")
              else [args.model])
    size = 1_000 if args.quick else 4_000
    rows = model_figures.run_all(models, paste=size, history=size, threads=args.threads)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(model_figures.render(rows, "python -m bench " + " ".join(args.argv)))
    return 0 if rows and not any("error" in r for r in rows) else 1


def _draft(args: argparse.Namespace) -> int:
    """``--draft MAIN:DRAFT``: draft-model decoding on W1's replies (bench/draft.py)."""
    from . import draft

    main, sep, helper = str(args.draft).partition(":")
    if not sep or not main or not helper:
        print("bench: --draft needs MAIN:DRAFT (two models)", file=sys.stderr)
        return EXIT_USAGE
    prompts, rounds, tokens = (2, 2, 64) if args.quick else (3, 3, 96)
    try:
        result = draft.run(main, helper, prompts=prompts, rounds=rounds, max_tokens=tokens,
                           threads=args.threads)
    except (LLMError, RuntimeError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(draft.render(result, "python -m bench " + " ".join(args.argv)))
    return 0


def _speculative(args: argparse.Namespace) -> int:
    """``--speculative``: prompt lookup on the quoting workload (bench/speculative.py)."""
    from . import speculative

    if args.model == "scripted":
        print("bench: --speculative needs a model (not --model scripted)", file=sys.stderr)
        return EXIT_USAGE
    from assistant.llm.registry import load_registry

    models = ([load_registry().small, W4_MODEL] if args.model == "embedded"
              else [args.model])
    rounds, tokens = (1, 128) if args.quick else (3, 256)
    try:
        results = speculative.run(models, threads=args.threads, rounds=rounds,
                                  max_tokens=tokens)
    except LLMError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(speculative.to_json(results), indent=1))
    else:
        print(speculative.render(results, "python -m bench " + " ".join(args.argv)))
    return 0


def _side_by_side(args: argparse.Namespace) -> int:
    """``--side-by-side``: the workloads (default W1 and W2) through the app and through
    llama-server (bench/side_by_side.py)."""
    from assistant.llm.registry import load_registry
    from bench.local_server import find_llama_server

    from . import side_by_side

    binary = find_llama_server()
    if binary is None or args.model == "scripted":
        print("bench: --side-by-side needs a model and llama.cpp's llama-server (`make "
              "llama-server` builds it; or set ASSISTANT_LLAMA_SERVER)", file=sys.stderr)
        return EXIT_USAGE
    names = [
        n if n.endswith(".jsonl") else canonical_name(n)
        for n in (args.workload or list(SIDE_BY_SIDE_WORKLOADS))
    ]
    workloads = _workloads(names, args.seed, args.quick)
    model = load_registry().small if args.model == "embedded" else args.model
    opts = RunOptions(
        max_reply_tokens=args.max_reply_tokens, progress=_progress,
    )
    questions = 0 if args.no_questions else (
        args.questions or (SIDE_BY_SIDE_QUICK_QUESTIONS if args.quick else None))
    work_dir = Path(tempfile.gettempdir()) / "offline-assistant-bench"
    work_dir.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    try:
        with _logging(args.verbose, work_dir / "bench.log"):
            rows = side_by_side.run(model, workloads, opts, llama_server=binary,
                                    threads=args.threads, log_dir=work_dir,
                                    questions=questions, progress=_progress,
                                    errors=errors, wait_s=args.llama_server_wait,
                                    chunk_reuse=_chunk_reuse_min() if args.chunk_reuse else 0,
                                    server_reuse=Settings().performance.server_chunk_reuse_min,
                                    read_ahead=args.read_ahead)
    except LLMError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    table = side_by_side.render(
        rows, workloads, "python -m bench " + " ".join(args.argv), errors,
        when=time.strftime("%Y-%m-%d", time.gmtime()), model=Path(model).name,
    )
    if args.report is not None:
        old = args.report.read_text(encoding="utf-8") if args.report.exists() else ""
        args.report.write_text(side_by_side.insert_section(old, table), encoding="utf-8")
        _progress(f"wrote the side-by-side table into {args.report}")
    if args.json:
        print(json.dumps({"rows": side_by_side.to_json(rows), "errors": errors}, indent=1))
    else:
        print(table)
    return 1 if errors else 0


def _progress(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def _machine(threads: int) -> dict[str, Any]:
    mem = 0.0
    with suppress(ValueError, OSError, AttributeError):
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    try:
        llama_version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        llama_version = "not installed"
    load = ""
    with suppress(OSError, AttributeError):
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return {
        "load_at_start": load,
        "cpus": os.cpu_count(),
        "memory_gb": round(mem, 1),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "llama_cpp_python": llama_version,
        "threads": threads or "auto",
    }


def _chunk_reuse_min() -> int:
    """The embedded engine's chunk size as the app ships it (``performance.chunk_reuse_min``):
    ``--chunk-reuse`` runs it and measures its quality with it."""
    return Settings().performance.chunk_reuse_min


def _workloads(names: list[str], seed: int, quick: bool) -> list[Workload]:
    out: list[Workload] = []
    for name in names:
        path = Path(name)
        if name.endswith(".jsonl") and path.exists():
            out.append(load_workload(path))
        else:
            out.append(generate(name, seed, quick=quick))
    return out


class _Models:
    """Loads each model once, lazily; closes them at the end."""

    def __init__(self, choice: str, threads: int, chunk_reuse: bool = False) -> None:
        self.choice = choice
        self.threads = threads
        self.chunk_reuse = chunk_reuse
        self._loaded: dict[tuple[str, int], LLMBackend] = {}
        self._rates: dict[int, float] = {}
        self._curves: dict[int, list[list[float]]] = {}

    def model_for(self, wl: Workload) -> str:
        if self.choice == "embedded":
            if wl.mode == "standard":
                return W4_MODEL
            from assistant.llm.registry import load_registry

            return load_registry().small
        return self.choice

    def available(self, wl: Workload) -> str | None:
        """None if the workload's model can be used, else why not."""
        if self.choice == "scripted":
            return None
        from assistant.llm.registry import resolve_model

        path, _entry = resolve_model(self.model_for(wl))
        if not path.exists():
            return f"model {self.model_for(wl)} not found at {path}"
        return None

    def n_ctx(self, wl: Workload) -> int:
        """The context size the workload's run needs."""
        if self.choice == "scripted":
            return wl.window_cap or (STANDARD_WINDOW if wl.mode == "standard" else LOCAL_WINDOW)
        n_ctx = Settings(mode=wl.mode).policy().window
        if wl.window_cap is not None:
            n_ctx = min(n_ctx, wl.window_cap)
        return n_ctx

    def get(self, wl: Workload) -> LLMBackend:
        """The workload's model with the context size its run needs (loaded once)."""
        return self.load(self.model_for(wl), self.n_ctx(wl))

    def load(self, name: str, n_ctx: int) -> LLMBackend:
        key = (name, n_ctx)
        got = self._loaded.get(key)
        if got is not None:
            return got
        if self.choice == "scripted":
            from tests.fakes.scripted import ScriptedBackend

            backend: LLMBackend = ScriptedBackend(
                window=n_ctx, trained_context=n_ctx, default_reply=SCRIPTED_REPLY
            )
        else:
            from assistant.llm.llama_backend import LlamaBackend

            # As the app loads it: prefill settings measured on the first load, then kept.
            backend = LlamaBackend.load(name, n_ctx=n_ctx, threads=self.threads, calibrate=True)
            if self.chunk_reuse:
                backend.tune_chunk_reuse(_chunk_reuse_min())
        self._loaded[key] = backend
        return backend

    def raw_rate(self, backend: LLMBackend) -> float | None:
        """Raw llama.cpp prefill tokens/s of a loaded model (measured once)."""
        from assistant.llm.llama_backend import LlamaBackend

        if not isinstance(backend, LlamaBackend):
            return None
        key = id(backend)
        if key not in self._rates:
            from .prefill import raw_prefill_rate

            self._rates[key] = raw_prefill_rate(backend)
        return self._rates[key]

    def raw_curve(self, backend: LLMBackend, window: int) -> list[list[float]] | None:
        """Raw llama.cpp prefill tokens/s by context depth over ``window`` tokens of a
        loaded model (measured once per model and window)."""
        from assistant.llm.llama_backend import LlamaBackend

        if not isinstance(backend, LlamaBackend):
            return None
        key = id(backend)
        if key not in self._curves:
            from .prefill import raw_prefill_curve

            depth = min(window, backend.info.context_window) - 64
            self._curves[key] = raw_prefill_curve(backend, depth)
        return self._curves[key]

    def close(self) -> None:
        for backend in self._loaded.values():
            backend.close()
        self._loaded.clear()


def reset_cache(backend: LLMBackend) -> None:
    """Start a run with an empty KV cache (so no run reuses the previous run's prefix)."""
    if isinstance(backend, KVCacheAware):
        backend.reset_kv_cache()


@contextmanager
def _logging(verbose: bool, log_path: Path) -> Iterator[None]:
    logger = logging.getLogger("assistant")
    handler: logging.Handler = (
        logging.StreamHandler(sys.stderr) if verbose
        else logging.FileHandler(log_path, encoding="utf-8")
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.argv = list(argv)
    try:
        names = [
            n if n.endswith(".jsonl") else canonical_name(n)
            for n in (args.workload or list(WORKLOAD_NAMES))
        ]
        strategies: list[StrategyName] = [
            canonical_strategy(s) for s in (args.strategy or list(STRATEGY_NAMES))
        ]
    except ValueError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.rerender is not None:
        if args.report is None:
            print("bench: --rerender needs --report", file=sys.stderr)
            return EXIT_USAGE
        saved = [from_json(json.loads(p.read_text(encoding="utf-8"))) for p in args.rerender]
        saved.sort(key=lambda r: r.quick)  # the full run first
        write_report(saved, args.report)
        _progress(f"wrote {args.report}")
        return 0
    if args.speculative:
        return _speculative(args)
    if args.draft is not None:
        return _draft(args)
    if args.model_figures:
        return _model_figures(args)
    if args.max_reply_tokens is None:
        args.max_reply_tokens = 24 if args.quick else 48
    if args.side_by_side:
        return _side_by_side(args)
    if args.max_reply_tokens < 16:
        print("bench: --max-reply-tokens must be at least 16", file=sys.stderr)
        return EXIT_USAGE
    if args.engine == "server" and args.model == "scripted":
        print("bench: --engine server needs a model file (not --model scripted)",
              file=sys.stderr)
        return EXIT_USAGE
    workloads = _workloads(names, args.seed, args.quick)
    if args.save_workloads is not None:
        for wl in workloads:
            _progress(f"saved {wl.save(args.save_workloads)}")
    if args.generate_only:
        return 0
    work_dir = Path(tempfile.gettempdir()) / "offline-assistant-bench"
    work_dir.mkdir(parents=True, exist_ok=True)
    with _logging(args.verbose, work_dir / "bench.log"):
        result = _run(args, workloads, strategies)
    if result is None:
        return 1
    if args.report is not None:
        shown = [result, *_other_kind(args.report, result)]
        shown.sort(key=lambda r: r.quick)  # the full run first
        written = write_report(shown, args.report)
        _progress(f"wrote {written[0]}, {len(written) - 1} results and plot files")
    if args.json:
        print(json.dumps(to_json(result), indent=1))
    else:
        text = render_markdown(result)
        print("\n".join(ln for ln in text.splitlines() if not ln.startswith("![")))
    return 0


def _run(
    args: argparse.Namespace, workloads: list[Workload], strategies: list[StrategyName]
) -> BenchResult | None:
    started = time.perf_counter()
    command = "python -m bench " + " ".join(args.argv)
    result = BenchResult(
        command=command.strip(),
        started=_dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        quick=args.quick,
        seed=args.seed,
        machine=_machine(args.threads),
        options={
            "max_reply_tokens": args.max_reply_tokens, "step_limit": 1,
            "temperature": 0.0, "threads": args.threads, "model": args.model,
            "strategies": list(strategies), "chunk_reuse": args.chunk_reuse,
            "engine": args.engine,
        },
    )
    done: set[tuple[str, str]] = set()
    if args.resume is not None:
        previous = from_json(json.loads(args.resume.read_text(encoding="utf-8")))
        if previous.quick != args.quick or previous.seed != args.seed:
            print("bench: --resume needs the same --quick and --seed as the saved run",
                  file=sys.stderr)
            return None
        result.runs = previous.runs
        result.workloads = previous.workloads
        result.wall_s = previous.wall_s
        result.speed, result.policy_time = previous.speed, previous.policy_time
        result.summary_time, result.notes = previous.summary_time, previous.notes
        result.real_sessions = previous.real_sessions
        result.perf = previous.perf
        had = set(previous.options.get("strategies", [])) | set(strategies)
        result.options["strategies"] = [n for n in STRATEGY_NAMES if n in had]
        done = {(r.workload, r.strategy) for r in result.runs}
        _progress(f"resuming: {len(done)} run(s) already done")
    left_out = [LABELS[n] for n in STRATEGY_NAMES if n not in result.options["strategies"]]
    if not args.quick and left_out and not any("left out of this full run" in n
                                                for n in result.notes):
        result.notes.append(
            f"{', '.join(left_out)} left out of this full run (`make bench` runs the full "
            "workloads with (a) and (e) so that it finishes in under an hour on 2 cores); the "
            "quick run below compares all five side by side. `python -m bench` runs "
            "every strategy on the full workloads."
        )
    opts = RunOptions(
        max_reply_tokens=args.max_reply_tokens, ask_questions=not args.no_questions,
        one_question_per_kind=args.quick, probe_reply_tokens=16 if args.quick else 32,
        progress=_progress,
    )
    models = _Models(args.model, args.threads, args.chunk_reuse)
    quality = _QualityPairs(args)
    # The engines are compared on one pair: W1 with the policy when they run, else the first.
    names = [w.name for w in workloads]
    engine_pair = (
        "W1" if "W1" in names else (names[0] if names else ""),
        "policy" if "policy" in strategies else (strategies[0] if strategies else ""),
    )
    try:
        if args.answers_only:
            _answers(result, args, models, workloads)
            return _finish(result, started)
        for wl in workloads:
            if all((wl.name, s) in done for s in strategies):
                continue
            why = models.available(wl)
            if why is not None:
                result.notes.append(f"{wl.name} skipped: {why}.")
                _progress(f"{wl.name} skipped: {why}")
                continue
            try:
                backend = models.get(wl)
            except LLMError as exc:
                result.notes.append(f"{wl.name} skipped: {exc}")
                _progress(f"{wl.name} skipped: {exc}")
                continue
            model = models.model_for(wl) if args.model != "scripted" else "scripted"
            for strategy in strategies:
                if (wl.name, strategy) in done:
                    continue
                reset_cache(backend)
                _progress(f"{wl.name} with {strategy} on {model} ...")
                run = run_workload(backend, wl, strategy, options=opts, model_label=model,
                                   pairs=quality.collect(wl, strategy, backend))
                run.raw_prefill_tps = models.raw_rate(backend)
                run.raw_prefill_curve = models.raw_curve(backend, run.window)
                run.chunk_reuse = args.chunk_reuse
                if not any(w.name == wl.name for w in result.workloads):
                    result.workloads.append(_info(wl, model, run.window))
                result.runs.append(run)
                _checkpoint(result, args, started)
                if args.engine == "server" and (wl.name, strategy) == engine_pair:
                    _on_server(result, args, models, wl, strategy, opts, run)
                    _checkpoint(result, args, started)
        if not args.no_real_sessions:
            _real_sessions(result, args, models, strategies)
        if not args.no_answers:
            _answers(result, args, models, workloads)
            _checkpoint(result, args, started)
        quality.measure(result)
        if not args.no_micro:
            _micro(result, models, workloads, quick=args.quick,
                   history=args.resume_history or (1_500 if args.quick else 6_000))
    finally:
        models.close()
    return _finish(result, started)


def _finish(result: BenchResult, started: float) -> BenchResult:
    _stamp_end(result, started)
    return result


def _answers(
    result: BenchResult, args: argparse.Namespace, models: _Models, workloads: list[Workload]
) -> None:
    """The answer benchmark on every workload and real session (:mod:`bench.answer_suite`)."""
    from .answer_suite import (
        DEFAULT_MODELS,
        QUICK_MODELS,
        QUICK_VARIANTS,
        SuiteOptions,
        model_missing,
        run_suite,
    )

    if args.model == "scripted":
        names = ["scripted"]
    elif args.answer_model:
        names = list(args.answer_model)
    else:
        default = QUICK_MODELS if args.quick else DEFAULT_MODELS
        names = list(default) if args.model == "embedded" else [args.model]
    usable: list[str] = []
    for name in names:
        why = None if name == "scripted" else model_missing(name)
        if why is None:
            usable.append(name)
        else:
            result.notes.append(f"answers: {why}; not asked.")
    sessions = [] if args.no_real_sessions else (args.real_session or default_folders())
    options = SuiteOptions(
        quick=args.quick, models=usable,
        variants=args.answer_strategy
        or list(QUICK_VARIANTS if args.quick else DEFAULT_ANSWER_STRATEGIES),
        questions=args.questions, windows=args.answer_window or [None],
        history_oracle=not args.no_history_oracle,
        personal=_personal_seeds(args),
    )
    result.options["answers"] = {"models": usable, "variants": list(options.variants),
                                 "questions": args.questions, "windows": args.answer_window}
    started = time.perf_counter()

    def save(run: TranscriptRun) -> None:  # after each transcript: an interrupted run keeps it
        result.answers.append(run)
        _checkpoint(result, args, started)
        if args.answers_report is not None:
            from .answers_report import section

            args.answers_report.parent.mkdir(parents=True, exist_ok=True)
            args.answers_report.write_text(
                f"Command: `{result.command}`\n\n" + section(result.answers) + "\n",
                encoding="utf-8",
            )

    named = args.real_session or (args.personal_chats and args.answers_only)
    if named and not args.workload:  # sessions or personal chats named alone: only they
        workloads = []
    run_suite(workloads, sessions, options, models.load, progress=_progress,
              notes=result.notes, on_run=save)
    if args.answers_report is not None:
        _progress(f"wrote {args.answers_report}")


def _personal_seeds(args: argparse.Namespace) -> list[int]:
    """Seeds of the personal chats the answer benchmark asks (``--personal-chats``)."""
    from .answer_suite import PERSONAL_CHATS

    count = args.personal_chats
    if count is None:  # a run that names its workloads asks only them
        count = 0 if args.quick or args.workload else PERSONAL_CHATS
    return [args.seed + k for k in range(count)]


def _on_server(
    result: BenchResult, args: argparse.Namespace, models: _Models, wl: Workload,
    strategy: StrategyName, opts: RunOptions, embedded: RunRecord,
) -> None:
    """The same pair through a local server, compared with the embedded run."""
    from assistant.llm.registry import resolve_model

    path, _entry = resolve_model(models.model_for(wl))
    n_ctx = models.n_ctx(wl)
    threads = args.threads or max(1, os.cpu_count() or 1)
    log_path = Path(tempfile.gettempdir()) / "offline-assistant-bench" / "llama-server.log"
    _progress(f"{wl.name} with {strategy} on the server engine ...")
    try:
        done = run_on_server(
            path, wl, strategy, opts, n_ctx=n_ctx, threads=threads, log_path=log_path,
            embedded=models.get(wl), reps=3 if args.quick else 8, progress=_progress,
        )
    except LLMError as exc:
        result.notes.append(f"{wl.name} {strategy} on the server engine failed: {exc}")
        _progress(f"server engine failed: {exc}")
        return
    cmp = compare(embedded, done.run, model=path.name, threads=threads,
                  counting=done.counting, interleaved=done.interleaved)
    result.engines.append(cmp.to_json())
    inter = cmp.interleaved
    _progress(
        f"{wl.name} {strategy}: TTFT ratio {cmp.ttft_ratio or 0:.2f}, decode speed ratio "
        f"{cmp.tps_ratio or 0:.2f}; same prompts: TTFT ratio {inter.get('ttft_ratio') or 0:.2f},"
        f" decode speed ratio {inter.get('tps_ratio') or 0:.2f} (server / embedded)"
    )


def _real_sessions(
    result: BenchResult, args: argparse.Namespace, models: _Models,
    strategies: list[StrategyName],
) -> None:
    """Each real session through each strategy in both modes with the extractive summarizer
    (seconds), and, in a full run, through the policy with the model writing the summaries
    (many minutes on 2 cores)."""
    given: list[Path] = args.real_session or default_folders()
    files = [p for p in given if p.is_file()] + find_sessions([p for p in given if p.is_dir()])
    if not files:
        result.notes.append("No real session found; the instructions-kept table is empty.")
        return
    done = {(r.session, r.strategy, r.mode, r.summarizer) for r in result.real_sessions}
    for path in files:
        for mode in Mode:
            for strategy in strategies:
                if (path.stem, strategy, mode, "extractive") in done:
                    continue
                _progress(f"real session {path.stem}: {strategy}, {mode}, extractive ...")
                result.real_sessions.append(run_real_session(path, strategy, mode))
            if args.quick or args.model == "scripted" or "policy" not in strategies:
                continue
            if (path.stem, "policy", mode, "model") in done:
                continue
            local = generate("W2", args.seed, quick=True)
            if models.available(local) is not None:
                continue
            name = models.model_for(local)
            model = models.load(name, Settings(mode=mode).policy().window)
            reset_cache(model)
            _progress(f"real session {path.stem}: policy, {mode}, {name} summaries ...")
            result.real_sessions.append(
                run_real_session(path, "policy", mode, summarizer="model", model=model)
            )


def _other_kind(report: Path, result: BenchResult) -> list[BenchResult]:
    """The saved results of the other kind (quick/full) beside the report, kept in it: so
    ``make bench`` can write the quick comparison and the full run into one report."""
    other = report.parent / "bench" / f"results-{'full' if result.quick else 'quick'}.json"
    if not other.exists():
        return []
    try:
        saved = from_json(json.loads(other.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _progress(f"not keeping {other}: unreadable ({exc})")
        return []
    return [saved] if saved.quick != result.quick else []


def _stamp_end(result: BenchResult, started: float) -> None:
    result.wall_s += time.perf_counter() - started
    with suppress(OSError, AttributeError):
        result.machine["load_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())


def _checkpoint(result: BenchResult, args: argparse.Namespace, started: float) -> None:
    """Save what is done so far (``--resume`` continues from it after an interruption)."""
    path: Path | None = args.checkpoint
    if path is None and args.report is not None:
        path = args.report.parent / "bench" / f"results-{'quick' if args.quick else 'full'}.json"
    if path is None:
        return
    snapshot = BenchResult(**{**result.__dict__, "machine": dict(result.machine)})
    _stamp_end(snapshot, started)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(to_json(snapshot, records=True)) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _info(wl: Workload, model: str, window: int) -> WorkloadInfo:
    return WorkloadInfo(
        name=wl.name, title=wl.title, mode=wl.mode, model=model, window=window,
        chat_turns=wl.chat_turns,
        tool_steps=sum(1 for s in wl.steps if isinstance(s, ToolStep)),
        facts=len(wl.facts),
    )


def _micro(
    result: BenchResult, models: _Models, workloads: list[Workload], *, quick: bool,
    history: int = 6_000,
) -> None:
    """Speed, policy-time, summary-time, prefill and resume measurements on the local
    model."""
    local = next((w for w in workloads if w.mode == "local"), None) or generate("W2", 0)
    if models.available(local) is not None:
        return
    # The app's real local window, also in a quick run (the targets are stated for it).
    backend = models.load(models.model_for(local), Settings(mode="local").policy().window)
    steps: list[tuple[str, Callable[[], None]]] = []

    def speed() -> None:
        reset_cache(backend)
        got = generation_speed(backend, reps=2 if quick else 5)
        if got is not None:
            result.speed = {**asdict(got), "ratio": got.ratio}

    def policy() -> None:
        result.policy_time = policy_time(backend, calls=40 if quick else 200)

    def summary() -> None:
        reset_cache(backend)
        result.summary_time = summary_time(backend)

    def prefill() -> None:
        from assistant.llm.llama_backend import LlamaBackend

        from .prefill import prefill_speed

        if isinstance(backend, LlamaBackend):
            reset_cache(backend)
            result.perf["prefill"] = prefill_speed(
                backend, prompt_tokens=512 if quick else 2_000, reps=2 if quick else 3
            )

    def resume() -> None:
        from assistant.llm.llama_backend import LlamaBackend

        from .prefill import resume_ttft

        if not isinstance(backend, LlamaBackend):
            return
        name = models.model_for(local)
        n_ctx = backend.info.context_window

        def reload() -> LlamaBackend:
            return LlamaBackend.load(name, n_ctx=n_ctx, threads=models.threads, calibrate=True)

        result.perf["resume"] = resume_ttft(
            backend, reload, history=history, raw_tps=models.raw_rate(backend),
            progress=_progress,
        )
        reset_cache(backend)

    def recall() -> None:
        result.perf["recall"] = recall_time(queries=20 if quick else 100)

    def restart() -> None:  # through the app's service: the question before and after quitting
        from .restart import bench_step

        result.perf["restart"] = bench_step(models.model_for(local), models.threads,
                                            quick=quick, progress=_progress)

    steps = [("generation speed", speed), ("policy time", policy),
             ("prefill speed", prefill), ("resume time to first token", resume),
             ("restart: first token after relaunch vs before quitting", restart),
             ("recall retrieval at 10,000 messages", recall)]
    if quick:  # filling a real local window first costs over a minute on 2 cores
        result.notes.append("The summary of a full local window is measured in the full run.")
    else:
        steps.append(("summary time", summary))
    for label, fn in steps:
        _progress(f"measuring {label} ...")
        try:
            fn()
        except Exception as exc:  # a measurement failing must not lose the workloads
            logging.getLogger("bench").exception("measurement failed")
            result.notes.append(f"{label} measurement failed: {type(exc).__name__}: {exc}")


class _QualityPairs:
    """Records the policy's chat calls on the local model, then measures chunk reuse
    against full evaluation on them (:mod:`bench.reuse_quality`)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.enabled = not args.no_reuse_quality and args.model != "scripted"
        self.positions = int(args.reuse_positions)
        self.seams = [int(n) for n in (args.reuse_seam or [0])]
        self.continuation = int(args.reuse_continuation)
        self.pairs: list[tuple[list[int], list[int]]] = []
        self.backend: LLMBackend | None = None
        self.source: list[str] = []

    def collect(
        self, wl: Workload, strategy: str, backend: LLMBackend
    ) -> list[tuple[list[int], list[int]]] | None:
        from assistant.llm.llama_backend import LlamaBackend

        if not self.enabled or strategy != "policy" or wl.mode != "local":
            return None
        if not isinstance(backend, LlamaBackend) or backend.chunk_reuse_blocker is not None:
            return None
        if self.backend is not None and self.backend is not backend:
            return None  # one model and window: the pairs are measured on it
        self.backend = backend
        self.source.append(wl.name)
        return self.pairs

    def measure(self, result: BenchResult) -> None:
        from assistant.llm.llama_backend import LlamaBackend

        from .reuse_quality import measure

        backend = self.backend
        if not self.enabled or not isinstance(backend, LlamaBackend):
            return
        _progress(f"measuring chunk reuse against full evaluation on {len(self.pairs)} "
                  f"calls of {', '.join(self.source)} ...")
        for i, seam in enumerate(self.seams):
            try:
                got = measure(backend, self.pairs, min_chunk=_chunk_reuse_min(),
                              min_positions=self.positions, seam=seam,
                              continuation=self.continuation, progress=_progress)
            except Exception as exc:  # a measurement failing must not lose the workloads
                logging.getLogger("bench").exception("reuse quality failed")
                result.notes.append(f"chunk reuse quality failed: {type(exc).__name__}: {exc}")
                return
            summary = got.summary()
            summary["workloads"] = self.source
            summary["model"] = backend.info.name
            _progress(f"chunk reuse, seam {seam}: {_quality_line(summary)}")
            if i == 0:
                result.perf["reuse_quality"] = summary
            else:
                result.perf.setdefault("reuse_quality_seams", []).append(summary)


def _quality_line(summary: dict[str, Any]) -> str:
    """One line of a chunk-reuse quality summary (the log, and the variants compared)."""
    def pct(key: str) -> str:
        value = summary.get(key)
        return "-" if value is None else f"{value:.1%}"

    return (f"{summary.get('calls_measured', 0)} calls, {summary.get('positions', 0)} "
            f"positions: next token {pct('next_token_agreement')}, positions "
            f"{pct('position_agreement')}, mean KL {summary.get('mean_kl') or 0:.4f} "
            f"(prefix-reuse control: next token {pct('control_next_token_agreement')}, "
            f"positions {pct('control_position_agreement')})")
