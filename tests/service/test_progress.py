"""Prompt evaluation progress with an estimate, and the speed of each reply, as the service
reports them to both faces (the terminal prints them as one ``[stats]`` line)."""

from __future__ import annotations

import io
import re
from collections.abc import Callable

from assistant.agent.events import PromptProgress
from assistant.cli.chat import TerminalPrinter
from assistant.llm.base import GenerationResult
from assistant.llm.worker import InlineExecutor, ModelWorker
from assistant.service.events import PrefillProgress, ReplyStats
from assistant.service.progress import PrefillTracker, reply_stats, stats_line, stats_text
from assistant.service.service import ChatService
from assistant.sessions.store import SessionStore
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]
STATS = re.compile(
    r"^\[stats\] prompt_tokens=(\d+) evaluated=(\d+) reused=(\d+) ttft_s=([\d.]+) "
    r"tokens_per_s=([\d.]+)$",
    re.MULTILINE,
)


def test_the_estimate_comes_from_the_speed_so_far() -> None:
    now = [100.0]
    tracker = PrefillTracker(clock=lambda: now[0])
    tracker.prompt_ready()
    first = tracker.progress(PromptProgress(1000, 7000))  # the cache held 1,000
    assert first == PrefillProgress(1000, 7000)
    now[0] += 4.0
    second = tracker.progress(PromptProgress(1512, 7000))
    assert second.tokens_per_s == 128.0
    assert second.eta_s is not None and abs(second.eta_s - 5488 / 128) < 1e-9
    # The next model call starts over.
    tracker.prompt_ready()
    now[0] += 60.0
    assert tracker.progress(PromptProgress(0, 300)).eta_s is None


def test_reply_stats_and_their_line() -> None:
    result = GenerationResult(
        text="x", prompt_tokens=6812, prompt_evaluated=512, prompt_reused=6300,
        completion_tokens=46, finish_reason="stop", prefill_s=4.0, generate_s=2.5,
        first_token_s=4.25,
    )
    stats = reply_stats(result)
    assert stats.tokens_per_s == 46 / 2.5 and stats.prefill_tokens_per_s == 128.0
    assert stats_line(stats) == (
        "[stats] prompt_tokens=6812 evaluated=512 reused=6300 ttft_s=4.25 tokens_per_s=18.4"
    )
    assert stats_text(stats) == (
        "4.2 s to first token · 18.4 tokens/s · prompt 6,812 tokens (6,300 from cache)"
    )


def test_the_service_reports_progress_per_batch_and_stats_per_call(make_rig: Make) -> None:
    backend = ScriptedBackend(["Done reading."], prefill_batch=100)
    rig = make_rig(backend=backend)
    rig.service.submit("word " * 450)
    progress = rig.of(PrefillProgress)
    total = backend.calls[0].prompt_tokens
    assert [p.done for p in progress] == [0, *range(100, total, 100), total]
    assert {p.total for p in progress} == {total}
    (stats,) = rig.of(ReplyStats)
    assert stats.prompt_tokens == total and stats.evaluated + stats.reused == total
    assert stats.completion_tokens == 2 and stats.ttft_s is not None


def test_the_terminal_prints_one_stats_line_per_reply_on_stderr(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from assistant.config import Settings

    out, err = io.StringIO(), io.StringIO()
    backend = ScriptedBackend(["Paris.", "Berlin."])
    printer = TerminalPrinter(out, err)
    service = ChatService(
        Settings(workspace=str(tmp_path / "ws")), SessionStore(),
        ModelWorker(lambda *_a: backend, InlineExecutor()), None, printer,
        persist_settings=None,
    )
    try:
        service.load_model()
        service.submit("Capital of France?")
        service.submit("And of Germany?")
    finally:
        service.shutdown()
    lines = STATS.findall(err.getvalue())
    assert len(lines) == 2
    for (prompt, evaluated, reused, _ttft, _speed), call in zip(lines, backend.calls, strict=True):
        assert int(prompt) == call.prompt_tokens
        assert int(evaluated) + int(reused) == int(prompt)
    assert int(lines[1][2]) > 0  # the second call reused the first one's cache
    assert "[stats]" not in out.getvalue()
