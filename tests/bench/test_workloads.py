"""Workload generation: deterministic, well-formed, sized as specified, replayable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.conversation import Message
from assistant.llm.fallback_tokenizer import Cl100kTokenizer
from assistant.tools.base import ToolContext, ToolLimits
from assistant.tools.read_file import ReadFileArgs, ReadFileTool
from assistant.tools.workspace import Workspace
from bench.workloads import (
    LOCAL_WINDOW,
    ChatStep,
    ToolStep,
    canonical_name,
    generate,
    load_workload,
)

NAMES = ("W1", "W2", "W3", "W4")


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_gives_identical_jsonl(name: str) -> None:
    a = generate(name, 7, quick=True)
    b = generate(name, 7, quick=True)
    assert a.to_jsonl() == b.to_jsonl()
    assert a.sidecar() == b.sidecar()


@pytest.mark.parametrize("name", NAMES)
def test_different_seed_differs(name: str) -> None:
    assert generate(name, 1, quick=True).to_jsonl() != generate(name, 2, quick=True).to_jsonl()


def test_full_w1_is_deterministic_and_shaped_as_specified() -> None:
    wl = generate("W1", 0)
    assert wl.to_jsonl() == generate("W1", 0).to_jsonl()
    assert wl.mode == "local" and wl.chat_turns == 40
    tok = Cl100kTokenizer()
    reads_per_turn: list[int] = []
    reads = 0
    for step in wl.steps:
        if isinstance(step, ToolStep) and step.tool == "read_file":
            reads += 1
        elif isinstance(step, ChatStep):
            reads_per_turn.append(reads)
            reads = 0
    assert all(1 <= n <= 3 for n in reads_per_turn)
    sizes = [tok.count(c) for c in wl.files.values()]
    assert min(sizes) >= 200 and max(sizes) <= 2_000 + 120  # whole blocks: a little over


def test_every_line_is_an_openai_message_and_every_call_has_its_result() -> None:
    for name in NAMES:
        wl = generate(name, 0, quick=True)
        lines = wl.to_jsonl().splitlines()
        msgs = [Message.from_openai(json.loads(ln)) for ln in lines]
        pending: set[str] = set()
        for m in msgs:
            if m.role == "assistant":
                assert m.tool_calls and not pending
                pending = {c.id for c in m.tool_calls}
            elif m.role == "tool":
                assert m.tool_call_id in pending
                pending.discard(m.tool_call_id or "")
            else:
                assert m.role == "user" and not pending
        assert not pending


def test_w2_is_plain_chat_and_w4_is_standard() -> None:
    w2 = generate("W2", 0)
    assert w2.chat_turns == 60
    assert all(isinstance(s, ChatStep) for s in w2.steps)
    w4 = generate("W4", 0)
    assert w4.mode == "standard" and w4.nominal_window == 32_768 and w4.window_cap is None
    assert generate("W4", 0, quick=True).window_cap == 2_048


def test_quick_workloads_are_smaller_and_emulate_a_smaller_window() -> None:
    tok = Cl100kTokenizer()
    for name in NAMES:
        full, quick = generate(name, 0), generate(name, 0, quick=True)
        assert quick.window_cap is not None and quick.window_cap < full.nominal_window
        assert full.window_cap is None
        assert tok.count(quick.to_jsonl()) < tok.count(full.to_jsonl()) / 2


def test_w3_has_one_output_larger_than_the_window_then_five_turns() -> None:
    wl = generate("W3", 0)
    tok = Cl100kTokenizer()
    big = [i for i, s in enumerate(wl.steps)
           if isinstance(s, ToolStep) and tok.count(s.result) > LOCAL_WINDOW]
    assert len(big) == 1
    after = wl.steps[big[0] + 1 :]
    assert len(after) == 5 and all(isinstance(s, ChatStep) for s in after)
    assert not wl.steps[big[0]].live  # appended verbatim: the app's cap would cut it


@pytest.mark.parametrize("name", NAMES)
def test_facts_are_planted_early_and_present_in_the_workload(name: str) -> None:
    wl = generate(name, 3, quick=True)
    text = "\n".join(json.dumps(m) for m in wl.messages()).lower()
    kinds = {f.kind for f in wl.facts}
    assert {"constraint", "number"} <= kinds
    if name != "W2":
        assert "path_read" in kinds
    if name in ("W1", "W4"):
        assert "path_modified" in kinds
    for fact in wl.facts:
        assert fact.turn <= 3
        assert fact.probe.lower() in text
        assert fact.answers and fact.question


def test_live_results_equal_the_real_read_file_in_the_workspace(tmp_path: Path) -> None:
    wl = generate("W1", 5, quick=True)
    wl.write_workspace(tmp_path)
    ctx = ToolContext(Workspace(tmp_path), ToolLimits.for_window(wl.nominal_window))
    reads = [s for s in wl.steps if isinstance(s, ToolStep) and s.tool == "read_file"]
    assert reads
    for step in reads:
        got = ReadFileTool().run(ReadFileArgs(path=step.arguments["path"]), ctx)
        assert got.text == step.result


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    wl = generate("W1", 4, quick=True)
    path = wl.save(tmp_path)
    assert path.name == "W1.jsonl" and (tmp_path / "W1.facts.json").exists()
    back = load_workload(path)
    assert back.messages() == wl.messages()
    assert back.facts == wl.facts
    assert back.files == wl.files
    assert [s for s in back.steps if isinstance(s, ToolStep) and s.live] == [
        s for s in wl.steps if isinstance(s, ToolStep) and s.live
    ]


def test_load_without_sidecar_skips_model_replies(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    rows = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    wl = load_workload(path)
    assert [s.text for s in wl.steps if isinstance(s, ChatStep)] == ["hi", "bye"]
    assert wl.facts == []


def test_names_and_aliases() -> None:
    assert canonical_name("w1") == "W1"
    assert canonical_name("plain-chat") == "W2"
    with pytest.raises(ValueError, match="unknown workload"):
        canonical_name("W9")
