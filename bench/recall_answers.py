"""Issue 25's long plain chat, as a user has it: five facts, chatter, then five questions.

The scenario runs through the session service (the core of the terminal chat and the window,
in process, with a real chat file and its recall index): the user states five facts (a port,
a budget, a date format, an indentation rule, a release date), then talks about other
things for ``chatter`` turns (long messages, so the context compacts at least once), then
asks about each fact. A reply answers when it contains the fact's value (see
:data:`FACTS`). Temperature 0; replies are capped (``max_reply``) to bound the work; one
CPU thread by default (on a shared machine, llama.cpp's threads wait on each other: one
measured 4.6 s for a reply that took 82 s with two).

::

    python -m bench.recall_answers                      # recall on and off, window 8,192
    python -m bench.recall_answers --window 4096 --recall on --placement after

Prints one JSON line per run (answers, replies, compactions, seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from assistant.agent.events import ContextUsage
from assistant.compaction.recall import Placement, Recall
from assistant.config import ModePolicy, Settings
from assistant.llm.base import LLMBackend
from assistant.llm.worker import InlineExecutor, ModelWorker
from assistant.service.service import ChatService
from assistant.sessions.store import SessionStore


@dataclass(frozen=True)
class Fact:
    statement: str
    question: str
    #: A reply answers when this pattern is found in it (case-insensitive).
    answer: str


FACTS: tuple[Fact, ...] = (
    Fact("Our staging server port is 12345.", "What is our staging server port?", r"12345"),
    Fact("The budget for the project is 4,200 euros.",
         "What is the budget for the project?", r"4[,. ]?200"),
    Fact("In our reports we write dates in the format DD.MM.YYYY.",
         "Which date format do we use in our reports?", r"DD\.MM\.YYYY"),
    Fact("Indent all code with 3 spaces, never tabs.",
         "How many spaces do we indent code with?", r"\b(3|three)\b"),
    Fact("The release date is 14 March 2027.", "When is the release date?",
         r"14(th)? (of )?march|march 14"),
)

TOPICS = (
    "the history of tea", "how bees make honey", "the rules of chess", "volcanoes in Iceland",
    "baking sourdough bread", "the life of octopuses", "medieval castles", "jazz in the 1920s",
    "how rainbows form", "the Roman aqueducts", "learning to juggle", "the migration of whales",
    "origami cranes", "the northern lights", "growing tomatoes", "the invention of paper",
    "desert plants", "knitting a scarf", "the moons of Jupiter", "old sailing ships",
    "the taste of coffee", "penguins in Antarctica", "the Silk Road", "making pottery",
    "the sound of violins", "autumn leaves", "the first bicycles", "coral reefs",
    "writing haiku", "wild mushrooms", "the pyramids of Giza", "hot air balloons",
    "the life of ants", "lighthouses", "snowflakes", "the game of go",
)


def chatter(i: int) -> str:
    """A long chatty message about a topic (about 200 tokens), nothing about the facts."""
    topic = TOPICS[i % len(TOPICS)]
    return (
        f"Let us talk about something else for a while: {topic}. I was reading about "
        f"{topic} last weekend and found it fascinating. There is so much to learn about "
        f"{topic}, from the small details to the big picture, and every book I open tells "
        f"the story a little differently. Some people say {topic} is mostly about patience "
        f"and careful observation, others say it is about curiosity and play. My neighbour "
        f"spent years on {topic} and still says she is a beginner. I would love to hear "
        f"your view. What are three surprising things about {topic} that most people do "
        f"not know? Keep it short and friendly, please."
    )


@dataclass
class Run:
    recall: bool
    placement: str
    window: int
    chatter: int
    answered: int = 0
    replies: list[dict[str, Any]] = field(default_factory=list)
    compactions: int = 0
    #: The largest prompt of the chat's replies (tokens).
    largest_prompt: int = 0
    summarizers: list[str] = field(default_factory=list)
    seconds: float = 0.0


def settings_for(
    model: str, window: int | None, max_reply: int, recall: bool | None, threads: int = 1,
    measured: bool = True,
) -> Settings:
    """Local mode at ``window`` (the policy's values scaled as the app scales them; None: the
    mode as shipped, so the model's measured effective context applies as in the app unless
    ``measured`` is False), recall on, off or as shipped (None), temperature 0, no saved
    model states (nothing kept beyond the run)."""
    settings = Settings(model=model, mode="local")
    if window is not None:
        base = settings.local
        factor = window / base.window
        settings.local = ModePolicy(
            window=window,
            protect=int(base.protect * factor),
            minimum=int(base.minimum * factor),
            reserve=max(256, int(base.reserve * factor)),
            keep_recent=max(256, int(base.keep_recent * factor)),
            summary_budget=max(128, int(base.summary_budget * factor)),
        )
    settings.sampling.temperature = 0.0
    settings.sampling.max_reply_tokens = max_reply
    settings.performance.resume_state = False
    settings.sampling.threads = threads
    if recall is not None:
        settings.compaction.recall = recall
    settings.compaction.use_measured_context = measured
    return settings


def _factory(model: str, n_ctx: int, threads: int) -> LLMBackend:
    from assistant.llm.llama_backend import LlamaBackend

    return LlamaBackend.load(model, n_ctx=n_ctx, threads=threads)


def run(
    model: str,
    *,
    window: int | None = 8_192,
    chatter_turns: int = 36,
    recall: bool | None = True,
    placement: Placement = "before",
    max_reply: int = 48,
    threads: int = 1,
    folder: Path | None = None,
    measured: bool = True,
) -> Run:
    """One chat of the scenario; the replies to the five questions and how many answer.
    ``window`` None and ``recall`` None: the settings as shipped (``measured`` False: without
    the model's measured effective context, as before it was applied)."""
    started = time.perf_counter()
    settings = settings_for(model, window, max_reply, recall, threads, measured)
    out = Run(settings.compaction.recall, placement, window or 0, chatter_turns)
    with tempfile.TemporaryDirectory() as tmp:
        root = folder or Path(tmp)
        sizes: list[int] = []

        def heard(event: object) -> None:
            if isinstance(event, ContextUsage):
                sizes.append(event.prompt_tokens)

        service = ChatService(
            settings, SessionStore(root / "sessions"), ModelWorker(_factory, InlineExecutor()),
            None, heard, persist_settings=None,
        )
        try:
            service.load_model()
            engine = service.model.engine
            if engine is None:
                raise RuntimeError(f"the model did not load: {service.model.error}")
            if isinstance(engine.controller.recall, Recall):
                engine.controller.recall.placement = placement
            out.window = engine.controller.policy().window
            for fact in FACTS:
                service.submit(fact.statement)
            for i in range(chatter_turns):
                service.submit(chatter(i))
            for fact in FACTS:
                service.submit(fact.question)
                reply = _last_reply(service)
                ok = re.search(fact.answer, reply, re.IGNORECASE) is not None
                out.answered += ok
                out.replies.append({"question": fact.question, "reply": reply, "ok": ok})
            conv = service.chat.conversation
            out.compactions = len(conv.compactions)
            out.largest_prompt = max(sizes, default=0)
            out.summarizers = [r.summarizer for r in conv.compactions]
        finally:
            service.shutdown()
    out.seconds = round(time.perf_counter() - started, 1)
    return out


def _last_reply(service: ChatService) -> str:
    for msg in reversed(service.chat.conversation.messages):
        if msg.role == "assistant":
            return msg.content
        if msg.role == "user":
            break
    return ""


def main(argv: list[str] | None = None) -> int:
    from assistant.llm.registry import small_model_path

    p = argparse.ArgumentParser(prog="python -m bench.recall_answers", description=__doc__)
    p.add_argument("--model", default=str(small_model_path()), help="GGUF file")
    p.add_argument("--window", type=int, default=8_192)
    p.add_argument("--shipped", action="store_true",
                   help="the settings as shipped (local mode, the model's measured effective "
                   "context, recall as its switch says unless --recall on/off); --window is "
                   "ignored")
    p.add_argument("--no-measured", action="store_true",
                   help="with --shipped: without the measured effective context (as before)")
    p.add_argument("--chatter", type=int, default=36)
    p.add_argument("--recall", choices=["on", "off", "both"], default="both")
    p.add_argument("--placement", choices=["before", "after"], default="before")
    p.add_argument("--max-reply", type=int, default=48)
    p.add_argument("--threads", type=int, default=1,
                   help="CPU threads (1: on a loaded machine more threads wait on each other)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as home:
        os.environ.setdefault("ASSISTANT_MODEL_DIR", str(Path(args.model).parent))
        os.environ["ASSISTANT_HOME"] = home
        os.environ.setdefault("ASSISTANT_CALIBRATE", "0")
        if args.shipped:
            recall = None if args.recall == "both" else args.recall == "on"
            result = run(args.model, window=None, chatter_turns=args.chatter, recall=recall,
                         placement=args.placement, max_reply=args.max_reply,
                         threads=args.threads, measured=not args.no_measured)
            print(json.dumps(asdict(result)), flush=True)
            return 0
        modes: list[Literal["on", "off"]] = ["off", "on"] if args.recall == "both" else [
            args.recall
        ]
        for mode in modes:
            result = run(
                args.model, window=args.window, chatter_turns=args.chatter,
                recall=mode == "on", placement=args.placement, max_reply=args.max_reply,
                threads=args.threads,
            )
            print(json.dumps(asdict(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
