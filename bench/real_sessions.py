"""Instructions kept on real sessions: another agent's transcript through each strategy.

A real session (OpenAI-format JSONL, with a ``.facts.json`` beside it listing ``must``
phrases: the user's instructions and the paths read or written) is replayed through one
strategy's context manager exactly as :mod:`assistant.replay` does for the policy: before
every assistant message the manager prepares the prompt (prune, compaction, cut outputs,
or whatever the strategy does); the recorded assistant message is then appended. At the end
the manager prepares once more: the facts are matched (case-insensitively) against that
prompt, the one the model would see next. A final prompt that does not fit the window counts
as nothing seen: the model cannot read a prompt it cannot be given.

``summarizer="extractive"`` counts with the offline cl100k tokenizer in the mode's configured
window (10,000 local, 131,072 standard) and summarizes without a model, in seconds;
``"model"`` uses the given model backend (its own tokenizer and trained window) and lets the
model write the summaries, which on 2 cores takes many minutes per session.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from assistant.compaction.controller import ContextController
from assistant.compaction.events import CompactionFinished, ContextEvent
from assistant.compaction.request import CallRequest
from assistant.compaction.summary import ExtractiveSummarizer, ModelSummarizer, Summarizer
from assistant.compaction.tokens import CountingBackend, TokenCounter
from assistant.compaction.transcript import load_transcript
from assistant.config import DEFAULT_SYSTEM_PROMPT, Mode, Settings
from assistant.conversation import CompactionRecord, Conversation
from assistant.llm.base import LLMBackend, PromptCounter

from .metrics import facts_in_text
from .strategies import StrategyName, build_strategy

SummarizerKind = Literal["extractive", "model"]


@dataclass
class RealSessionResult:
    session: str
    strategy: str
    mode: str
    summarizer: SummarizerKind
    seen: int
    total: int
    lost: list[str] = field(default_factory=list)
    compactions: int = 0
    model_summaries: int = 0
    extractive_summaries: int = 0
    #: Smallest prompt after a compaction, as a share of the window.
    min_fill: float | None = None
    final_tokens: int = 0
    window: int = 0
    final_overflowed: bool = False
    wall_s: float = 0.0


def find_sessions(folders: list[Path]) -> list[Path]:
    """``*.jsonl`` files with a ``.facts.json`` beside them, in ``folders``; a copy of one
    already found (the same session and facts in another folder) is replayed once."""
    found: list[Path] = []
    seen: set[str] = set()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.jsonl")):
            facts = path.with_name(path.stem + ".facts.json")
            if not facts.exists():
                continue
            digest = hashlib.sha256(path.read_bytes() + b"\0" + facts.read_bytes()).hexdigest()
            if digest not in seen:
                seen.add(digest)
                found.append(path)
    return found


def default_folders() -> list[Path]:
    """The copy kept with the tests (a source checkout) and the team's shared folder."""
    root = Path(__file__).resolve().parents[1]  # bench/ sits at the checkout's top
    return [root / "tests" / "data" / "real-sessions", root.parent / "shared" / "real-sessions"]


def _prompt_text(messages: list[dict[str, object]]) -> str:
    parts: list[str] = []
    for m in messages:
        parts.append(str(m.get("content") or ""))
        calls = m.get("tool_calls")
        if calls:
            parts.append(json.dumps(calls, ensure_ascii=False))
    return "\n".join(parts)


def run_real_session(
    path: Path,
    strategy: StrategyName,
    mode: Mode,
    *,
    summarizer: SummarizerKind = "extractive",
    model: LLMBackend | None = None,
) -> RealSessionResult:
    """Replay ``path`` through ``strategy`` and report the must-facts seen at the end."""
    started = time.perf_counter()
    facts = json.loads(path.with_name(path.stem + ".facts.json").read_text(encoding="utf-8"))
    must: list[str] = list(facts.get("must", []))
    system, messages = load_transcript(path)
    settings = Settings(mode=mode)
    backend: PromptCounter
    if summarizer == "model":
        if model is None:
            raise ValueError("the model summarizer needs a model backend")
        backend = model
    else:
        backend = CountingBackend(window=settings.policy().window)

    def make(b: PromptCounter, counter: TokenCounter) -> Summarizer:
        if summarizer == "model" and isinstance(b, LLMBackend):
            return ModelSummarizer(b, counter)
        return ExtractiveSummarizer(counter)

    built = build_strategy(strategy, backend, settings, summarizer=make)
    manager = built.manager
    records: list[CompactionRecord] = []
    if isinstance(built.inner, ContextController):

        def on_event(event: ContextEvent) -> None:
            if isinstance(event, CompactionFinished):
                records.append(event.record)

        built.inner.on_event = on_event
    prompt = system or DEFAULT_SYSTEM_PROMPT
    conv = Conversation()
    for msg in messages:
        if msg.role == "assistant":
            manager.prepare(CallRequest(conv, prompt))
        conv.append(msg.model_copy(deep=True))
    final = manager.prepare(CallRequest(conv, prompt))
    window = built.policy.window
    overflowed = final.prompt_tokens > window
    seen = [False] * len(must) if overflowed else facts_in_text(
        _prompt_text(final.messages), must
    )
    fills = [r.tokens_after / window for r in records]
    return RealSessionResult(
        session=path.stem,
        strategy=strategy,
        mode=mode,
        summarizer=summarizer,
        seen=sum(seen),
        total=len(must),
        lost=[f for f, ok in zip(must, seen, strict=True) if not ok],
        compactions=len(records),
        model_summaries=sum(1 for r in records if r.summarizer == "model"),
        extractive_summaries=sum(1 for r in records if r.summarizer == "extractive"),
        min_fill=min(fills, default=None),
        final_tokens=final.prompt_tokens,
        window=window,
        final_overflowed=overflowed,
        wall_s=time.perf_counter() - started,
    )
