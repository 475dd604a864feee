"""``python -m bench.stop_latency``: how long Esc takes to stop each phase of a turn.

On the real model, through the app's engine: Stop (the job's cancel token, as Esc sets it)
is pressed from another thread a moment into each phase, and the time until the phase has
returned control (the call ended, the chat consistent and usable) is measured:

* **prefill**: a long prompt being read (llama.cpp's abort callback stops the decode);
* **generation**: a reply being written;
* **compaction**: ``/compact`` writing its summary;
* **background**: a summary written ahead of time (the user sent a message), including
  putting the chat's KV cache back;
* **tool**: a shell command (``sleep 30``) the user ran.

Each phase runs ``--repeat`` times; the report gives every figure and the median. Bounded:
a few seconds per run.

    python -m bench.stop_latency [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from assistant.agent.events import AgentEvent, ContextChanged, PromptProgress
from assistant.compaction.events import CompactionStarted
from assistant.compaction.request import CallRequest
from assistant.config import Sampling, Settings
from assistant.conversation import Conversation, Message
from assistant.engine import Engine, build_engine
from assistant.llm.base import CancelToken, GenerationOptions, KVCacheAware, LLMBackend

PHASES = ("prefill", "generation", "compaction", "background", "tool")


class StopClock:
    """Presses Stop ``delay`` seconds after :meth:`arm` (from a timer thread) and remembers
    when; :meth:`latency` is the time from that press to now."""

    def __init__(self, token: CancelToken, delay: float) -> None:
        self.token = token
        self.delay = delay
        self.pressed: float | None = None
        self._timer: threading.Timer | None = None

    def arm(self) -> None:
        if self._timer is None:
            self._timer = threading.Timer(self.delay, self._press)
            self._timer.start()

    def _press(self) -> None:
        self.pressed = time.perf_counter()
        self.token.cancel()

    def latency(self) -> float | None:
        if self._timer is not None:
            self._timer.cancel()
        return None if self.pressed is None else time.perf_counter() - self.pressed


def _paragraphs(n: int) -> str:
    return "\n".join(
        f"Paragraph {i}: the service on host web-{i % 5} restarted after {i * 3 % 50} s "
        f"and logged code E{1000 + i}; the operator noted ticket T-{2000 + i}."
        for i in range(n)
    )


def _chat(n_turns: int) -> Conversation:
    conv = Conversation()
    for i in range(n_turns):
        conv.append(Message(role="user", content=f"Question {i}: " + _paragraphs(6)))
        conv.append(Message(role="assistant", content=f"Answer {i}: code E{1000 + i}."))
    return conv


def measure(engine: Engine, settings: Settings, phase: str) -> float | None:
    """One stop in ``phase``: seconds from the press to the phase's end (None: the phase
    ended before Stop was pressed)."""
    backend = engine.backend
    token = CancelToken()
    clock = StopClock(token, 0.4)
    if isinstance(backend, KVCacheAware):
        backend.reset_kv_cache()
    if phase in ("prefill", "generation"):
        msgs = [{"role": "user", "content": _paragraphs(60 if phase == "prefill" else 1)
                 + "\nWrite a long story about these hosts."}]
        started = phase == "prefill"

        def on_prefill(done: int, total: int) -> None:
            if started:
                clock.arm()

        for ev in backend.generate(msgs, GenerationOptions(400), cancel=token,
                                   on_prefill=on_prefill):
            if ev.delta and phase == "generation":
                clock.arm()
        return clock.latency()
    if phase == "tool":
        conv = Conversation()
        clock.arm()
        engine.agent.run_tool_command(conv, "run_command", {"command": "sleep 30"}, token)
        return clock.latency()
    # /compact works at any size; a summary is written ahead only past the fill level.
    conv = _chat(14 if phase == "compaction" else 26)
    if phase == "compaction":

        def on_event(ev: AgentEvent) -> None:
            if isinstance(ev, ContextChanged) and isinstance(ev.event, CompactionStarted):
                clock.arm()
            if isinstance(ev, PromptProgress):
                clock.arm()

        engine.agent.on_event = on_event
        engine.agent.compact(conv, None, token)
        return clock.latency()
    # background: the summary written ahead of time, stopped as a sent message stops it
    clock.arm()
    tools = engine.agent.registry.schemas()
    engine.controller.precompute(CallRequest(conv, settings.system_prompt, tools, token))
    return clock.latency()


def run(backend: LLMBackend, repeat: int, phases: tuple[str, ...] = PHASES,
        log: Callable[[str], None] = lambda s: None) -> dict[str, list[float]]:
    settings = Settings(workspace=tempfile.mkdtemp(prefix="bench-stop-"), tool_approval="auto",
                        sampling=Sampling(max_reply_tokens=400))
    engine = build_engine(backend, lambda: settings, None, lambda _e: None)
    out: dict[str, list[float]] = {p: [] for p in phases}
    for phase in phases:
        for i in range(repeat):
            got = measure(engine, settings, phase)
            log(f"  {phase} {i + 1}/{repeat}: "
                + ("ended before Stop" if got is None else f"{got * 1000:.0f} ms"))
            if got is not None:
                out[phase].append(got)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stop_latency")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--phase", action="append", choices=PHASES)
    parser.add_argument("--no-abort", action="store_true",
                        help="for comparison: llama.cpp is not given the abort callback "
                        "(Stop is seen only between n_batch chunks and tokens, as before)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from assistant.llm.llama_backend import LlamaBackend

    backend = LlamaBackend.load(args.model, n_ctx=8192, calibrate=True)
    if args.no_abort:
        backend.use_abort_callback(False)
    try:
        got = run(backend, args.repeat, tuple(args.phase or PHASES),
                  lambda s: print(s, file=sys.stderr, flush=True))
    finally:
        backend.close()
    result: dict[str, Any] = {
        p: {"seconds": v, "median": statistics.median(v) if v else None}
        for p, v in got.items()
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for phase, r in result.items():
        figures = ", ".join(f"{s * 1000:.0f}" for s in r["seconds"]) or "none"
        median = "-" if r["median"] is None else f"{r['median'] * 1000:.0f} ms"
        print(f"{phase:11s} stop latency [ms]: {figures}; median {median}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
