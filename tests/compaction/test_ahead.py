"""Compaction ahead of time (assistant/compaction/ahead.py): the next compaction's summary
written while the model is idle, used at the threshold when its span is unchanged."""

from __future__ import annotations

from assistant.compaction.ahead import AHEAD_FILL
from assistant.compaction.request import CallRequest
from assistant.conversation import CompactionReason, Conversation, Message
from assistant.llm.base import CancelToken, GenerationOptions
from tests.fakes.scripted import ScriptedBackend

from .helpers import GOOD_SUMMARY, SYSTEM, controller, local_policy, tool_turn, writes

POLICY = local_policy(window=4000, reserve=500, keep_recent=900, summary_budget=400)


def _fill(ctl, conv: Conversation, share: float) -> None:  # type: ignore[no-untyped-def]
    """Tool turns until the prompt passes ``share`` of the compaction threshold."""
    threshold = POLICY.window - POLICY.reserve
    i = 0
    while ctl.measure(CallRequest(conv, SYSTEM)).prompt_tokens < share * threshold:
        tool_turn(conv, i, size=12)
        i += 1


def _summary_calls(backend: ScriptedBackend) -> int:
    return sum(1 for c in backend.calls if c.grammar is not None or "summar" in c.prompt_text)


def test_nothing_is_written_below_the_fill_level() -> None:
    ctl, backend, _ = controller(ScriptedBackend([writes(GOOD_SUMMARY)]), POLICY)
    conv = Conversation()
    _fill(ctl, conv, AHEAD_FILL - 0.2)
    assert ctl.precompute(CallRequest(conv, SYSTEM)) is None
    assert backend.calls == []


def test_the_summary_written_ahead_is_used_at_the_threshold() -> None:
    ctl, backend, _ = controller(ScriptedBackend([writes(GOOD_SUMMARY)] * 30), POLICY)
    conv = Conversation()
    _fill(ctl, conv, AHEAD_FILL + 0.05)
    got = ctl.precompute(CallRequest(conv, SYSTEM))
    assert got is not None and got.outcome.kind == "model"
    calls = len(backend.calls)
    assert calls >= 1
    # Written again only when something changed: the same span is not summarized twice.
    assert ctl.precompute(CallRequest(conv, SYSTEM)) is None
    assert len(backend.calls) == calls
    # The chat grows turn by turn (the summary is written again after each turn that moves
    # the cut), until a message takes it past the threshold.
    threshold = POLICY.window - POLICY.reserve
    i = 100
    while ctl.measure(CallRequest(conv, SYSTEM)).prompt_tokens < threshold - 40:
        tool_turn(conv, i, size=4)
        i += 1
        got = ctl.precompute(CallRequest(conv, SYSTEM)) or got
    calls = len(backend.calls)
    conv.append(Message(role="user", content="And what about file 3?"))
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    record = req.compaction
    assert record is not None and record.reason == CompactionReason.THRESHOLD
    assert len(backend.calls) == calls  # no summary was written inside the turn
    assert "written ahead of time" in record.summarizer_note
    assert "src/file_0.py" in record.summary
    assert record.first_kept_id == got.first_kept_id
    assert ctl.summary_cache.hits == 1
    assert req.prompt_tokens + POLICY.reserve <= POLICY.window


def test_a_changed_span_is_summarized_again() -> None:
    ctl, backend, _ = controller(ScriptedBackend([writes(GOOD_SUMMARY)] * 4), POLICY)
    conv = Conversation()
    _fill(ctl, conv, AHEAD_FILL + 0.05)
    assert ctl.precompute(CallRequest(conv, SYSTEM)) is not None
    calls = len(backend.calls)
    # /compact with a focus asks for another summary: the one written ahead is not used.
    record = ctl.compact(
        CallRequest(conv, SYSTEM, focus="the files under src/"), CompactionReason.MANUAL
    )
    assert record is not None
    assert len(backend.calls) > calls
    assert "ahead of time" not in record.summarizer_note


def test_cancelling_stops_it_and_the_cache_is_put_back() -> None:
    backend = ScriptedBackend(["OK.", writes(GOOD_SUMMARY), writes(GOOD_SUMMARY)])
    ctl, _, _ = controller(backend, POLICY)
    conv = Conversation()
    _fill(ctl, conv, AHEAD_FILL + 0.05)
    # The chat's last prompt is in the KV cache, as after a reply.
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    for _ in backend.generate(req.messages, GenerationOptions(8)):
        pass
    before = backend.save_state().tokens
    cancel = CancelToken()
    cancel.cancel()  # the user sent a message before it started
    assert ctl.precompute(CallRequest(conv, SYSTEM, cancel=cancel)) is None
    assert ctl.summary_cache.preferred_cuts() == []
    assert backend.save_state().tokens == before
    # Written to the end, the summary also leaves the chat's cache as it was.
    assert ctl.precompute(CallRequest(conv, SYSTEM)) is not None
    assert backend.save_state().tokens == before
