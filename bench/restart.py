"""Restart (issue 43): the first token of a short question after quitting and relaunching,
against the same question before quitting, through the app's own chat service (context
management, recall, compaction ahead of time and the saved model state all included).

A chat of pasted notes is built up to ``fill`` of the window's room (near the compaction
threshold), the app's files are copied aside, and the question is asked in the chat never
closed (before quitting). Then the service is shut down as the window does on quit, the
files are put back as they were before the question, a new service with a newly loaded
backend opens the chat (its saved state is loaded, as on a relaunch) and the same question
is asked. Both runs report the time to first token (from the start of the call's
preparation, a compaction included), the tokens evaluated and reused, whether a compaction
ran, and whether the two prompts were the same text.

``python -m bench.restart`` runs it alone (with the small model by default, a window of
2,048 tokens and the chat filled to 85% of it); ``python -m bench`` runs it among its
measurements (``perf["restart"]``; the report's targets compare the two times).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assistant.agent.events import ModelCallFinished
from assistant.compaction.ahead import Precomputed
from assistant.compaction.events import CompactionStarted
from assistant.compaction.request import CallRequest
from assistant.config import ModePolicy, Settings
from assistant.llm.base import LLMBackend
from assistant.llm.worker import InlineExecutor, ModelWorker
from assistant.service.events import ModelStateRestored, ServiceEvent
from assistant.service.service import ChatService
from assistant.sessions.store import SessionStore

from .prefill import _filler_turn

#: The question of the issue's trial, asked before quitting and after the relaunch.
QUESTION = "Thanks. Repeat the last note once more."

Factory = Callable[[str, int, int], LLMBackend]


@dataclass
class Asked:
    """One answer to the question: what its call evaluated and how soon it began."""

    ttft_s: float
    prompt_tokens: int
    evaluated: int
    reused: int
    compacted: bool
    reply: str
    prompt: str = ""


class _Rig:
    """One run of the app's service on its own backend (jobs inline, as the terminal chat)."""

    def __init__(self, factory: Factory, settings: Settings, workspace: Path) -> None:
        self.events: list[ServiceEvent] = []
        self.prompts: list[tuple[list[dict[str, Any]], Any]] = []
        worker = ModelWorker(self._recording(factory), InlineExecutor())
        settings = settings.model_copy(update={"workspace": str(workspace)})
        self.service = ChatService(settings, SessionStore(), worker, None, self.events.append,
                                   persist_settings=None)
        self.service.compact_ahead = True  # as the window (the terminal writes none ahead)
        self.service.load_model()

    def _recording(self, factory: Factory) -> Factory:
        """``factory``, its backend's chat calls recorded with their results."""

        def load(model: str, n_ctx: int, threads: int) -> LLMBackend:
            backend = factory(model, n_ctx, threads)
            generate = backend.generate

            def recorded(messages: Any, *args: Any, **kwargs: Any) -> Any:
                for event in generate(messages, *args, **kwargs):
                    if event.result is not None:
                        self.prompts.append((list(messages), event.result))
                    yield event

            backend.generate = recorded  # type: ignore[method-assign]
            return backend

        return load

    def ask(self, text: str) -> Asked:
        start = len(self.events)
        if not self.service.submit(text):
            raise RuntimeError(f"the service refused {text!r}")
        new = self.events[start:]
        finished = [e for e in new if isinstance(e, ModelCallFinished)]
        if not finished:
            raise RuntimeError("no reply: " + "; ".join(map(str, new[-3:])))
        first = finished[0]
        result = first.result
        messages = next((m for m, r in self.prompts if r is result), [])
        compacted = any(isinstance(getattr(e, "event", None), CompactionStarted) for e in new)
        return Asked(
            ttft_s=round(first.ttft_s or 0.0, 3), prompt_tokens=result.prompt_tokens,
            evaluated=result.prompt_evaluated, reused=result.prompt_reused,
            compacted=compacted, reply=result.text[:200], prompt=_text(messages),
        )

    def no_more_ahead(self) -> None:
        """No summary written ahead after the question: it cannot change the question's
        answer or time (the harness waits for it, a user would not)."""
        engine = self.service.model.engine
        assert engine is not None

        def none(_call: CallRequest) -> Precomputed | None:
            return None

        engine.controller.precompute = none  # type: ignore[method-assign,assignment]

    def fill(self, share: float, say: Callable[[str], None]) -> int:
        """Paste notes until the prompt is ``share`` of the window's room; its tokens."""
        engine = self.service.model.engine
        assert engine is not None
        pol = engine.controller.policy()
        room = pol.window - pol.reserve
        tokens, i = 0, 0
        while True:
            handle = self.service.chat.handle
            if handle is not None:
                tokens = engine.controller.estimate(
                    handle.conversation, engine.agent.settings().system_prompt,
                    engine.agent.offered_tools())
            if tokens >= share * room or i > 60:
                return tokens
            say(f"restart: turn {i + 1}, {tokens:,} of {room:,} tokens")
            self.ask(_filler_turn(i, 120) + " Reply in one short sentence.")
            i += 1


def _text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in messages)


@contextlib.contextmanager
def _home(path: Path) -> Iterator[None]:
    """The app's files (chats, saved states, calibration) under ``path`` meanwhile."""
    old = os.environ.get("ASSISTANT_HOME")
    os.environ["ASSISTANT_HOME"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("ASSISTANT_HOME", None)
        else:
            os.environ["ASSISTANT_HOME"] = old


def restart_figures(
    factory: Factory, settings: Settings, *, fill: float = 0.85, question: str = QUESTION,
    progress: Callable[[str], None] | None = None, keep_prompts: bool = False,
) -> dict[str, Any]:
    """The question before quitting and after a relaunch (see the module docstring)."""
    say = progress or (lambda _t: None)
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp:
        home, aside = Path(tmp) / "home", Path(tmp) / "aside"
        home.mkdir()
        with _home(home):
            first = _Rig(factory, settings, Path(tmp) / "workspace")
            history = first.fill(fill, say)
            chat_id = first.service.chat.chat_id
            first.service.saved_states.writer.flush()
            handle = first.service.chat.handle
            if handle is not None:  # what quitting saves with the chat (the state is saved)
                first.service.saved_states.write_carried(handle)
            shutil.copytree(home, aside)
            say("restart: the question before quitting ...")
            first.no_more_ahead()
            live = first.ask(question)
            first.service.shutdown()  # as the window does on quit
            shutil.rmtree(home)
            shutil.copytree(aside, home)  # as the files were before the question
            say("restart: relaunched, the same question ...")
            second = _Rig(factory, settings, Path(tmp) / "workspace")
            started = time.perf_counter()
            if chat_id is None or not second.service.open_chat(chat_id):
                raise RuntimeError("the chat did not open again")
            opened_s = time.perf_counter() - started
            restored = [e for e in second.events if isinstance(e, ModelStateRestored)]
            second.no_more_ahead()
            after = second.ask(question)
            second.service.shutdown()
    out: dict[str, Any] = {
        "history_tokens": history,
        "restored_tokens": restored[-1].tokens if restored else 0,
        "open_s": round(opened_s, 3),
        "same_prompt": live.prompt == after.prompt,
        "before": asdict(live), "after": asdict(after),
        "live_ttft_s": live.ttft_s, "restart_ttft_s": after.ttft_s,
    }
    if not keep_prompts:
        for side in ("before", "after"):
            out[side].pop("prompt")
    return out


def windowed(settings: Settings, window: int) -> Settings:
    """``settings`` in local mode with a ``window``-token policy scaled from the shipped
    one's shares (a short chat reaches the threshold)."""
    policy = ModePolicy(window=window, protect=window // 5, minimum=window // 20,
                        reserve=window // 8, keep_recent=window * 3 // 10,
                        summary_budget=window * 3 // 40)
    return settings.model_copy(update={"mode": "local", "local": policy})


def bench_step(model: str, threads: int, *, quick: bool,
               progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The benchmark's measurement (``perf["restart"]``): ``model`` in a 2,048-token window
    (quick) or 4,096 (the issue's 4,021-token chat), filled to 85%."""
    from assistant.llm.llama_backend import LlamaBackend

    def load(name: str, n_ctx: int, _threads: int) -> LLMBackend:
        return LlamaBackend.load(name, n_ctx=n_ctx, threads=threads, calibrate=True)

    settings = windowed(Settings(model=model), 2_048 if quick else 4_096)
    settings.sampling.max_reply_tokens = 48
    return restart_figures(load, settings, progress=progress)


def main(argv: list[str] | None = None) -> int:
    from assistant.llm.worker import default_factory

    p = argparse.ArgumentParser(prog="python -m bench.restart", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--window", type=int, default=2_048)
    p.add_argument("--fill", type=float, default=0.85)
    p.add_argument("--reply-tokens", type=int, default=48)
    args = p.parse_args(argv)
    settings = windowed(Settings(model=args.model), args.window)
    settings.sampling.max_reply_tokens = args.reply_tokens
    got = restart_figures(default_factory, settings, fill=args.fill,
                          progress=lambda t: print(t, flush=True))
    print(json.dumps(got, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
