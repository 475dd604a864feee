"""The side-by-side section's parts that need no server: the front ends' front cut, the
table and its place in the report (the runs themselves, on real processes:
tests/bench/test_integration.py; the questions: test_end_answers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from assistant.compaction.recall import HEADING_BEFORE
from assistant.compaction.request import CallRequest
from assistant.compaction.tokens import TokenCounter
from assistant.config import EffectivePolicy, Settings
from assistant.conversation import Conversation, Message, ToolCall
from assistant.llm.base import StreamEvent
from assistant.llm.transcript_recall import UNLABELED_HEADING
from bench import side_by_side
from bench.answers import Transcript
from bench.metrics import summarize
from bench.runner import RunOptions, run_workload
from bench.side_by_side import (
    BEGIN,
    EMBEDDED,
    END,
    HEADING,
    SERVER_FRONT_CUT,
    SERVER_POLICY,
    EngineRow,
    embedded_reuse_label,
    insert_section,
    policy_transcript,
    render,
    window_for,
    worth,
)
from bench.strategies import FrontCut, build_strategy
from bench.workloads import ChatStep, Workload
from tests.fakes.scripted import ScriptedBackend

from .helpers import REPLY, chat_workload, scripted

SYSTEM = "You are a test assistant."


def _policy(window: int, reserve: int = 100) -> EffectivePolicy:
    return EffectivePolicy("local", window, protect=0, minimum=0, reserve=reserve,
                           keep_recent=0, summary_budget=128)


def test_front_cut_drops_only_the_oldest_messages_that_do_not_fit() -> None:
    backend = scripted()
    conv = Conversation()
    msgs = [conv.append(Message(role="user", content="same words " * 40)) for _ in range(10)]
    counter = TokenCounter(backend)
    size = counter.message(msgs[0])
    overhead = counter.overhead(SYSTEM, None)
    pol = _policy(window=overhead + 7 * size + 100, reserve=100)  # 7 of the 10 fit
    manager = FrontCut(backend, lambda: pol)
    req = manager.prepare(CallRequest(conv, SYSTEM))
    assert [m["content"] for m in req.messages[1:]] == [m.content for m in msgs[3:]]
    assert req.prompt_tokens + pol.reserve <= pol.window
    assert len(manager.drops) == 3 and all(d.messages_dropped == 1 for d in manager.drops)


def test_front_cut_never_orphans_a_tool_result() -> None:
    backend = scripted()
    conv = Conversation()
    conv.append(Message(role="user", content="read it"))
    call = ToolCall(name="read_file", arguments={"path": "a.py"})
    conv.append(Message(role="assistant", tool_calls=[call]))
    conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                        content="x = 1\n" * 200))
    conv.append(Message(role="user", content="what is x?"))
    counter = TokenCounter(backend)
    total = counter.overhead(SYSTEM, None) + sum(counter.message(m) for m in conv.messages)
    manager = FrontCut(backend, lambda: _policy(window=total, reserve=50))
    req = manager.prepare(CallRequest(conv, SYSTEM))
    assert all(m["role"] != "tool" for m in req.messages)
    assert req.messages[-1]["content"] == "what is x?"


def test_front_cut_on_a_workload_never_overflows_and_forgets_the_start() -> None:
    run = run_workload(scripted(window=2_048), chat_workload(14), "front-cut",
                       options=RunOptions(ask_questions=False))
    s = summarize(run)
    assert s.overflowed_calls == 0 and s.compactions >= 1 and s.prunes == 0
    assert s.retention_context == 0.0  # the facts were in the first turn, cut first
    # The switches the agent reads: a front cut retries after an overflow, never summarizes.
    strategy = build_strategy("front-cut", scripted(), Settings())
    assert strategy.settings.compaction.compact_on_overflow
    switches = strategy.settings.compaction
    assert not switches.auto_compact and not switches.prune


def _workload_asking_the_port(turns: int) -> Workload:
    """A chat that outgrows a 2,048 window, then asks for the port of its first turn."""
    wl = chat_workload(turns)
    wl.steps.append(ChatStep("Which port did I give you at the start?"))
    return wl


def test_the_policy_runs_the_workload_with_the_apps_recall_only_when_asked() -> None:
    """The side-by-side's policy rows run as the app ships: after a compaction the latest
    question gets the excerpts of the whole chat (the port, from the compacted first turn)."""
    prompts: dict[bool, str] = {}
    for recall in (False, True):
        backend = scripted(window=2_048)
        run = run_workload(backend, _workload_asking_the_port(14), "policy",
                           options=RunOptions(ask_questions=False), recall=recall)
        assert summarize(run).compactions >= 1
        chat = [c for c in backend.calls if c.options is None or c.options.grammar is None]
        prompts[recall] = chat[-1].prompt_text or ""
    # (a chat model is shown the excerpts under their unlabeled heading)
    assert UNLABELED_HEADING in prompts[True] and "4321" in prompts[True]
    assert UNLABELED_HEADING not in prompts[False] and HEADING_BEFORE not in prompts[False]


def test_the_policy_keeps_its_prompts_within_the_cap_it_is_given() -> None:
    """``window_cap``: the measured effective context below the model's window (the app's
    engine builds prompts within it; the front ends' cut fills the server's window)."""
    backend = scripted(window=8_192)
    run = run_workload(backend, chat_workload(14), "policy",
                       options=RunOptions(ask_questions=False), window_cap=2_048)
    assert run.window == 2_048 and summarize(run).compactions >= 1
    assert max(c.prompt_tokens for c in backend.calls) < 2_048


def test_the_policy_transcript_keeps_a_quick_window_and_caps_at_the_measured_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quick = Transcript("W2", "workload", "local", SYSTEM, [], [], window_cap=1_280)
    assert policy_transcript(scripted(), quick).window_cap == 1_280
    full = replace(quick, window_cap=None)
    monkeypatch.setattr("bench.answers.measured_context", lambda _info: 2_048)
    assert policy_transcript(scripted(), full).window_cap == 2_048
    monkeypatch.setattr("bench.answers.measured_context", lambda _info: None)
    assert policy_transcript(scripted(), full).window_cap is None


def _row(label: str, answered: int, ttft: float, workload: str = "W2") -> EngineRow:
    return EngineRow(workload, label, "policy" if "policy" in label else "front-cut", ttft,
                     ttft * 2, 1200, 60, 0.05, 300 if "policy" in label else 0, 310.0, 0, 42.0,
                     2, answered, 8, question_prompt=900.0)


def test_the_table_ends_with_the_answers_and_says_what_the_policy_is_worth() -> None:
    wl = chat_workload(2)
    rows = [_row(EMBEDDED, 5, 0.5), _row(SERVER_FRONT_CUT, 2, 0.6), _row(SERVER_POLICY, 5, 0.55)]
    rows[1].not_asked = 1
    rows[0].passage_answered = 6
    table = render(rows, [wl], "python -m bench --side-by-side --quick", ["W1, x: gone"],
                   when="2026-11-26", model="m.gguf")
    assert table.startswith("Run 2026-11-26 with m.gguf: `python -m bench --side-by-side")
    assert f"window {window_for(wl):,}" in table
    assert ("| W2 | embedded engine, app policy | 0.50 / 1.00 | 1,200 | 60 (5.0%) | 300 | 0 "
            "| 2 | 0 | 310 | 42 | 5/8 |") in table
    assert table.splitlines()[2].endswith("| answers at the end |")
    assert "| 2/8 (1 not askable) |" in table
    assert ("- W2: on llama-server the app's policy answered 5/8 (+38% against the front "
            "cut's 2/8 (1 not askable)), first token median 0.55 s against 0.60 s, 1,500 "
            "prompt tokens evaluated (summaries included) against 1,200. Given each question's "
            "source passage alone, the model answers 6/8.") in table
    assert "Not measured: W1, x: gone" in table
    # A workload without both server rows says nothing about the worth.
    assert worth([_row(EMBEDDED, 5, 0.5, "W1"), _row(SERVER_POLICY, 5, 0.5, "W1")]) == []


def test_the_report_gets_the_table_in_its_own_part_and_keeps_the_rest() -> None:
    doc = "# Benchmarks\n\n## Answers\n\ntext\n"
    once = insert_section(doc, "| first |\n")
    assert once.startswith(doc.rstrip()) and f"{HEADING}\n\n{BEGIN}\n| first |\n{END}" in once
    twice = insert_section(once + "\n## Later\n\nkept\n", "| second |")
    assert "| first |" not in twice and "| second |" in twice
    assert twice.count(BEGIN) == 1 and twice.endswith("## Later\n\nkept\n")
    assert twice.count(HEADING) == 1


class _TunableScripted(ScriptedBackend):
    """The scripted model with the embedded engine's chunk-reuse switch: each call records
    the setting it ran with."""

    chunk_reuse_blocker: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.chunk_reuse = 0
        self.reuse_at_call: list[int] = []

    def tune_chunk_reuse(self, min_chunk: int) -> None:
        self.chunk_reuse = min_chunk

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[StreamEvent]:
        self.reuse_at_call.append(self.chunk_reuse)
        return super().generate(*args, **kwargs)


def test_chunk_reuse_adds_a_run_of_the_embedded_engine_with_it_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--side-by-side --chunk-reuse``: the same workload and questions again on the embedded
    engine with its chunk reuse on, from an empty cache; a server that cannot start is said
    and the embedded rows stay."""
    import assistant.llm.registry as registry
    from assistant.llm.llama_backend import LlamaBackend

    backend = _TunableScripted(window=2_048, trained_context=2_048, default_reply=REPLY)
    monkeypatch.setattr(LlamaBackend, "load", classmethod(lambda _cls, *_a, **_k: backend))
    monkeypatch.setattr(registry, "resolve_model", lambda _m: (tmp_path / "m.gguf", None))
    monkeypatch.setattr(side_by_side, "passage_answers", lambda _b, _t: 0)
    wl = _workload_asking_the_port(14)
    errors: list[str] = []
    rows = side_by_side.run("m", [wl], RunOptions(), llama_server=str(tmp_path / "none"),
                            log_dir=tmp_path, questions=0, errors=errors, chunk_reuse=64,
                            server_reuse=32)
    assert [r.label for r in rows] == [EMBEDDED, embedded_reuse_label(64)]
    assert rows[0].evaluated == rows[1].evaluated  # the scripted model reuses prefixes only
    assert backend.reuse_at_call[0] == 0 and backend.reuse_at_call[-1] == 64
    assert backend.reuse_at_call.count(0) == backend.reuse_at_call.count(64)
    # The three server runs (front cut, policy, policy with n_cache_reuse) could not start.
    assert len(errors) == 3 and all("llama-server" in e for e in errors)
    assert "n_cache_reuse 32" in errors[-1]  # the server is sent its own, smaller size


def test_the_front_cut_sends_the_front_ends_sampler_and_the_policy_the_apps(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The baseline drives llama-server as front ends do (their repeat penalty), never with
    the app's server sampler (issue 29); the policy's runs send the app's."""
    import contextlib

    import assistant.llm.registry as registry
    from assistant.llm.base import LLMError
    from assistant.llm.llama_backend import LlamaBackend
    from assistant.llm.openai_backend import LLAMA_SERVER_SAMPLER, ServerBackend, ServerConfig

    monkeypatch.setattr(LlamaBackend, "load", classmethod(
        lambda _cls, *_a, **_k: (_ for _ in ()).throw(LLMError("no embedded run here"))))
    monkeypatch.setattr(registry, "resolve_model", lambda _m: (tmp_path / "m.gguf", None))

    class _Server(contextlib.AbstractContextManager[Any]):
        url, pid = "http://127.0.0.1:9", 1

        def __init__(self, *_a: Any, **_k: Any) -> None: ...

        def __exit__(self, *_exc: object) -> None: ...

    sent: list[ServerConfig] = []

    def connect(config: ServerConfig, *_a: Any) -> ServerBackend:
        sent.append(config)
        raise LLMError("not started")

    monkeypatch.setattr(side_by_side, "LocalServer", _Server)
    monkeypatch.setattr(ServerBackend, "connect", staticmethod(connect))
    (tmp_path / "llama-server").write_text("")
    errors: list[str] = []
    side_by_side.run("m", [_workload_asking_the_port(4)], RunOptions(),
                     llama_server=str(tmp_path / "llama-server"), log_dir=tmp_path,
                     questions=0, errors=errors)
    assert [c.sampler for c in sent] == [side_by_side.FRONT_END_SAMPLER, None]
    assert side_by_side.FRONT_END_SAMPLER["repeat_penalty"] == 1.1
    assert side_by_side.FRONT_END_SAMPLER != LLAMA_SERVER_SAMPLER
    assert len(errors) == 3


def test_read_ahead_repeats_the_embedded_run_reading_each_message_but_its_last_word_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--side-by-side --read-ahead``: the last embedded run again, each message less its
    last word read ahead (untimed, its tokens counted apart) before the timed send, which
    then evaluates fewer tokens and replies the same; the table says so."""
    import assistant.llm.registry as registry
    from assistant.llm.llama_backend import LlamaBackend

    backend = _TunableScripted(window=2_048, trained_context=2_048, default_reply=REPLY)
    monkeypatch.setattr(LlamaBackend, "load", classmethod(lambda _cls, *_a, **_k: backend))
    monkeypatch.setattr(registry, "resolve_model", lambda _m: (tmp_path / "m.gguf", None))
    monkeypatch.setattr(side_by_side, "passage_answers", lambda _b, _t: 0)
    wl = _workload_asking_the_port(14)
    rows = side_by_side.run("m", [wl], RunOptions(), llama_server=str(tmp_path / "none"),
                            log_dir=tmp_path, questions=0, errors=[], read_ahead=True)
    assert [r.label for r in rows] == [EMBEDDED, EMBEDDED + side_by_side.AHEAD]
    plain, ahead = rows
    drafts = [w.messages[-1]["content"].rsplit("\n\n", 1)[-1] for w in backend.warms]
    sent = [s.text for s in wl.steps if isinstance(s, ChatStep)]
    typed = [t.rstrip().rsplit(maxsplit=1)[0] for t in sent]  # each less its last word
    # In order; those whose send compacts are not read ahead (a read-ahead never compacts).
    assert drafts == [t for t in typed if t in drafts] and len(drafts) >= len(typed) // 2
    assert len(typed) - len(drafts) <= plain.cuts
    assert plain.ahead_evaluated == 0 < ahead.ahead_evaluated
    # The sends read only the rest: what they saved is what was read ahead (and the ends
    # of the drafts' prompts, which the sends replaced).
    assert ahead.evaluated < plain.evaluated * 0.8
    assert plain.evaluated - ahead.evaluated <= ahead.ahead_evaluated
    assert ahead.replies == plain.replies and len(plain.replies) == len(sent)
    assert ahead.same_as_without == f"replies {len(sent)}/{len(sent)}, answers 0/0"
    table = render(rows, [wl], "python -m bench --side-by-side --read-ahead")
    assert f"| {ahead.ahead_evaluated:,} |" in table
    assert f"- {wl.name}, {ahead.label}: replies {len(sent)}/{len(sent)}" in table
