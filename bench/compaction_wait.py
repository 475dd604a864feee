"""``python -m bench.compaction_wait``: the wait a compaction adds to the user's turn, per
compaction, with and without the summary written ahead of time.

The same chat runs twice on the real model through the app's engine (context controller,
agent, the same settings): once as before (every compaction writes its summary inside the
turn that reaches the threshold) and once with ``ContextController.precompute`` run after
every turn, as the service does while the user reads. Per compaction it reports the
compaction's own time inside the turn (``CompactionRecord.duration_s``: plan, summary,
check), which is what the user waits for before the prompt is read; the time spent ahead
(while the user reads, not waited for) is reported beside it. The run is bounded: a small
window (``--window``), short replies and a fixed number of turns.

    python -m bench.compaction_wait [--window 3072] [--turns 14] [--reply 24] [--json]

``--workload W1|W2`` runs a benchmark workload's user messages instead, through the session
service as the window drives it, with the shipped settings (see :mod:`bench.wait_workload`):

    python -m bench.compaction_wait --workload W2 --mode ahead --reply 16 [--turns 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assistant.agent.events import AgentEvent, ContextChanged
from assistant.compaction.events import CompactionFinished
from assistant.compaction.request import CallRequest
from assistant.config import Sampling, Settings, default_local
from assistant.conversation import Conversation
from assistant.engine import build_engine
from assistant.llm.base import CancelToken, LLMBackend

_DEFAULT_TURNS = 14
TOPICS = ("invoices", "the parser", "deploy scripts", "the cache", "user accounts",
          "the report job", "search", "backups")


def user_message(i: int) -> str:
    """One turn of a support chat: a pasted note of about 250 tokens and a question."""
    topic = TOPICS[i % len(TOPICS)]
    lines = [f"Note {i} about {topic}:"]
    for j in range(9):
        lines.append(f"- item {i}.{j}: {topic} step {j} takes {(i * 7 + j * 3) % 40 + 5} ms "
                     f"on host web-{(i + j) % 5} and logs code E{100 + i * 10 + j}.")
    lines.append(f"Which host logged code E{100 + i * 10 + 4}?")
    return "\n".join(lines)


@dataclass
class Run:
    ahead: bool
    #: Seconds each compaction took inside its turn.
    waits: list[float] = field(default_factory=list)
    #: Which summarizer wrote each (the note on the compaction record).
    notes: list[str] = field(default_factory=list)
    #: Seconds spent writing summaries ahead of time (between turns).
    ahead_s: list[float] = field(default_factory=list)
    turns: int = 0

    @property
    def median(self) -> float | None:
        return statistics.median(self.waits) if self.waits else None


def run_chat(backend: LLMBackend, *, window: int, turns: int, reply: int, ahead: bool) -> Run:
    """One bounded chat on ``backend`` (its KV cache emptied first)."""
    from assistant.llm.base import KVCacheAware

    if isinstance(backend, KVCacheAware):
        backend.reset_kv_cache()
    base = default_local()
    scale = window / base.window  # the local policy's proportions, for a smaller window
    local = base.model_copy(update={
        "window": window, "protect": int(base.protect * scale),
        "minimum": int(base.minimum * scale), "reserve": int(base.reserve * scale),
        "keep_recent": int(base.keep_recent * scale),
        "summary_budget": int(base.summary_budget * scale),
    })
    settings = Settings(workspace=tempfile.mkdtemp(prefix="bench-wait-"), local=local,
                        sampling=Sampling(max_reply_tokens=reply, temperature=0.0))
    events: list[AgentEvent] = []
    engine = build_engine(backend, lambda: settings, None, events.append)
    # As the window: writing ahead, a compaction in the turn does not wait for the model.
    engine.controller.defer_model = lambda: ahead
    conv = Conversation()
    out = Run(ahead=ahead)
    tools = engine.agent.registry.schemas()
    for i in range(turns):
        events.clear()
        engine.agent.chat(conv, user_message(i), CancelToken())
        out.turns += 1
        for ev in events:
            if isinstance(ev, ContextChanged) and isinstance(ev.event, CompactionFinished):
                record = ev.event.record
                out.waits.append(record.duration_s)
                out.notes.append(record.summarizer_note)
        print(f"  turn {i + 1}/{turns}: {len(out.waits)} compaction(s)", file=sys.stderr,
              flush=True)
        if ahead:
            start = time.perf_counter()
            got = engine.controller.precompute(
                CallRequest(conv, settings.system_prompt, tools=tools)
            )
            if got is not None:
                out.ahead_s.append(time.perf_counter() - start)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compaction_wait")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--window", type=int, default=3072)
    parser.add_argument("--turns", type=int, default=None,
                        help="chat turns (with --workload: cut the workload after this many "
                        "messages; default: all of it)")
    parser.add_argument("--reply", type=int, default=24, help="longest reply (tokens)")
    parser.add_argument("--mode", choices=("inside", "ahead", "both"), default="both",
                        help="run the chat with summaries inside the turn, ahead, or both")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--workload", choices=("W1", "W2"),
                        help="the workload's user messages through the session service with "
                        "the shipped settings (--window is then ignored; --turns cuts it)")
    parser.add_argument("--pause-cap", type=float, default=600.0,
                        help="with --workload: the longest the user reads after a reply "
                        "while the summary is written ahead (s)")
    parser.add_argument("--budget", type=float, default=None,
                        help="with --workload: send no new step after this many seconds")
    parser.add_argument("--threads", type=int, default=1,
                        help="with --workload: CPU threads (1 on a loaded machine)")
    args = parser.parse_args(argv)
    if args.workload:
        return _main_workload(args)
    args.turns = _DEFAULT_TURNS if args.turns is None else args.turns
    from assistant.llm.llama_backend import LlamaBackend

    backend = LlamaBackend.load(args.model, n_ctx=args.window, calibrate=True)
    try:
        runs = [
            run_chat(backend, window=args.window, turns=args.turns, reply=args.reply,
                     ahead=ahead)
            for ahead in {"inside": (False,), "ahead": (True,), "both": (False, True)}[
                args.mode]
        ]
    finally:
        backend.close()
    result: dict[str, Any] = {
        "model": args.model, "window": args.window, "turns": args.turns,
        "runs": [{**asdict(r), "median": r.median} for r in runs],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for r in runs:
        label = "with the summary written ahead" if r.ahead else "summary inside the turn"
        waits = ", ".join(f"{w:.2f}" for w in r.waits) or "none"
        median = "-" if r.median is None else f"{r.median:.2f} s"
        print(f"{label}: {len(r.waits)} compaction(s), wait per compaction [s]: {waits}; "
              f"median {median}")
        if r.ahead:
            ahead = ", ".join(f"{s:.1f}" for s in r.ahead_s) or "none"
            print(f"  written ahead (while the user reads) [s]: {ahead}")
            used = sum("written ahead" in n for n in r.notes)
            print(f"  compactions that used a summary written ahead: {used} of {len(r.waits)}")
    return 0


def _main_workload(args: argparse.Namespace) -> int:
    from bench.recall_answers import settings_for
    from bench.wait_workload import run_workload, sources
    from bench.workloads import generate

    modes = {"inside": (False,), "ahead": (True,), "both": (False, True)}[args.mode]
    turns = args.turns
    with tempfile.TemporaryDirectory(prefix="bench-wait-home-") as home:
        model = _model_path(args.model)
        os.environ.setdefault("ASSISTANT_MODEL_DIR", str(model.parent))
        os.environ["ASSISTANT_HOME"] = home
        os.environ.setdefault("ASSISTANT_CALIBRATE", "0")
        # Local mode as shipped: the model's measured effective context applies.
        settings = settings_for(str(model), None, args.reply, None, args.threads)
        runs = [
            run_workload(generate(args.workload), settings, _load, ahead=ahead, turns=turns,
                         pause_cap=args.pause_cap, budget_s=args.budget,
                         log=lambda line: print(line, file=sys.stderr, flush=True))
            for ahead in modes
        ]
    if args.json:
        print(json.dumps([{**asdict(r), "median": r.median} for r in runs], indent=2))
        return 0
    for r in runs:
        label = "summary written ahead" if r.ahead else "summary inside the turn"
        median = "-" if r.median is None else f"{r.median:.2f} s"
        print(f"{r.workload} {label} (window {r.window:,}): {r.steps} step(s), {r.messages} "
              f"message(s), {r.seconds:.0f} s; {len(r.compactions)} compaction(s), "
              f"median wait {median}" + (f"; cut: {r.cut}" if r.cut else ""))
        for c in r.compactions:
            used = ("summary written ahead used" if c.ahead_used
                    else "written in the turn")
            after = (f"; the turn then evaluated {c.evaluated:,} prompt tokens in "
                     f"{c.ttft_s:.1f} s" if c.ttft_s is not None else "")
            print(f"  step {c.step}: wait {c.wait_s:.2f} s, {used} ({c.summarizer}){after}")
        if r.compactions:
            print(f"  summary written ahead used: {sum(c.ahead_used for c in r.compactions)} "
                  f"of {len(r.compactions)}; the compactions' summaries: "
                  + sources([(c.summarizer, c.note) for c in r.compactions]))
        if r.ahead:
            wrote = [p for p in r.pauses if p.wrote]
            if wrote:
                print("  summaries written in the reading pauses: "
                      + sources([(p.kind, p.note) for p in wrote]))
            print(f"  reading pauses that wrote a summary ahead: {len(wrote)} of "
                  f"{len(r.pauses)}; their length [s]: "
                  + (", ".join(f"{p.seconds:.1f}" for p in wrote) or "none")
                  + f"; capped: {sum(p.capped for p in r.pauses)}")
    return 0


def _model_path(model: str) -> Path:
    """A GGUF file path from a path or a registry name (the bench's --model)."""
    path = Path(model)
    if path.suffix == ".gguf":
        return path
    from assistant.llm.registry import resolve_model, small_model_path

    try:
        return resolve_model(model)[0]
    except (OSError, ValueError, KeyError):  # an unknown name: the default model
        return small_model_path()


def _load(model: str, n_ctx: int, threads: int) -> LLMBackend:
    from assistant.llm.llama_backend import LlamaBackend

    return LlamaBackend.load(model, n_ctx=n_ctx, threads=threads)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
