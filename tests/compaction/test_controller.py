"""The controller: threshold, records, summary injection, switches, cancel, overflow."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from assistant.compaction.context_render import render_history
from assistant.compaction.controller import (
    ContextTooLargeError,
)
from assistant.compaction.events import (
    CompactionCancelled,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
)
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.prompts import MECHANICAL_MARKER, SUMMARY_HEADER
from assistant.compaction.summary.summarizer import (
    ExtractiveSummarizer,
    ModelSummarizer,
    SummaryOutcome,
    SummaryRequest,
)
from assistant.config import CompactionSwitches
from assistant.conversation import Conversation, Message
from assistant.llm.base import CancelToken, GenerationCancelled
from assistant.service.status import summarizer_line
from tests.fakes.scripted import ScriptedBackend

from .helpers import (
    FILLER_SUMMARY,
    GOOD_SUMMARY,
    SYSTEM,
    controller,
    local_policy,
    repair_from,
    tool_turn,
)

NO_PRUNE: dict[str, Any] = {"switches": lambda: CompactionSwitches(prune=False)}


def _free(be: ScriptedBackend) -> dict[str, Any]:
    """Controller arguments for a model summarized with the free prompts (no grammar)."""
    summarizer = ModelSummarizer(be)
    summarizer.grammar_state, summarizer.grammar_note = "off", "switched off"
    return {"summarizer": summarizer, **NO_PRUNE}


def _long_chat(turns: int = 8, size: int = 60) -> Conversation:
    conv = Conversation()
    conv.append(Message(role="user", content="Always answer in French. Never touch setup.cfg."))
    conv.append(Message(role="assistant", content="D'accord."))
    for i in range(turns):
        tool_turn(conv, i, size=size)
    return conv


def _policy_for(conv: Conversation, extra: int = 0, **kw: Any) -> Any:
    """A policy whose window is exactly prompt + reserve (+ extra)."""
    ctl, _, _ = controller(**NO_PRUNE)
    n = ctl.estimate(conv, SYSTEM)
    base = local_policy(reserve=300, keep_recent=1_000, summary_budget=400)
    return replace(base, window=n + base.reserve + extra, **kw)


def test_threshold_exactly_at_the_window_does_not_compact() -> None:
    conv = _long_chat()
    ctl, be, events = controller(policy=_policy_for(conv), **NO_PRUNE)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.compaction is None and not be.calls and not events


def test_threshold_one_over_compacts() -> None:
    conv = _long_chat()
    pol = _policy_for(conv, extra=-1)
    ctl, _be, events = controller(ScriptedBackend([GOOD_SUMMARY]), pol, **NO_PRUNE)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    rec = req.compaction
    assert rec is not None and rec.reason == "threshold" and rec.summarizer == "model"
    assert rec.tokens_after < rec.tokens_before and rec.tokens_after == req.prompt_tokens
    assert req.prompt_tokens + pol.reserve <= pol.window
    assert [type(e) for e in events] == [CompactionStarted, CompactionFinished]
    assert conv.compactions == [rec] and rec.count == 1


def test_summary_is_injected_as_a_synthetic_user_message_never_stored() -> None:
    conv = _long_chat()
    n_messages = len(conv.messages)
    ctl, _, _ = controller(ScriptedBackend([GOOD_SUMMARY]), _policy_for(conv, -1), **NO_PRUNE)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert len(conv.messages) == n_messages
    assert req.messages[0] == {"role": "system", "content": SYSTEM}
    assert req.messages[1]["role"] == "user"
    assert req.messages[1]["content"].startswith(SUMMARY_HEADER)
    assert "## Goal\n- Answer questions about src/file_0.py" in req.messages[1]["content"]
    rec = conv.last_compaction
    assert rec is not None and rec.first_kept_id is not None
    kept = conv.messages[conv.index_of(rec.first_kept_id) :]
    # The kept messages follow it, earlier turns' calls written as notes.
    assert req.messages[2:] == render_history([m.to_openai() for m in kept], first=0)
    assert req.segments["summary"] > 0
    assert sum(req.segments.values()) == req.prompt_tokens


def test_record_fields() -> None:
    conv = _long_chat()
    conv.append(Message(role="user", content="Please finish the refactor."))
    ctl, _, _ = controller(ScriptedBackend([GOOD_SUMMARY]), _policy_for(conv, -1), **NO_PRUNE)
    rec = ctl.compact(CallRequest(conv, SYSTEM, focus="the parser"), "manual")
    assert rec is not None
    assert rec.reason == "manual" and rec.focus == "the parser"
    assert rec.previous_summary is None and rec.duration_s >= 0
    assert "src/file_0.py" in rec.files_read
    assert rec.last_summarized_id == conv.messages[conv.index_of(rec.first_kept_id or "") - 1].id
    assert "Always answer in French." in rec.summary
    assert MECHANICAL_MARKER in rec.summary


def test_focus_reaches_the_prompt() -> None:
    conv = _long_chat()
    be = ScriptedBackend([GOOD_SUMMARY])
    ctl, _, _ = controller(be, _policy_for(conv, -1), **NO_PRUNE)
    ctl.compact(CallRequest(conv, SYSTEM, focus="database schema"), "manual")
    prompt = be.calls[0].messages[-1]["content"]
    assert "Pay special attention to: database schema" in prompt
    assert "<conversation>" in prompt and "[User]: Always answer in French." in prompt


def test_second_compaction_updates_the_previous_summary_and_files_accumulate() -> None:
    conv = _long_chat()
    be = ScriptedBackend([GOOD_SUMMARY, GOOD_SUMMARY])
    pol = _policy_for(conv, -1)
    ctl, _, _ = controller(be, pol, **NO_PRUNE)
    first = ctl.prepare(CallRequest(conv, SYSTEM)).compaction
    assert first is not None
    for i in range(8, 16):
        tool_turn(conv, i, size=60, path=f"lib/more_{i}.py")
    second = ctl.prepare(CallRequest(conv, SYSTEM)).compaction
    assert second is not None and second.count == 2
    assert second.previous_summary == first.summary
    update_prompt = be.calls[-1].messages[-1]["content"]
    assert "<previous-summary>" in update_prompt
    assert "Answer questions about src/file_0.py" in update_prompt
    assert set(first.files_read) <= set(second.files_read)
    assert "lib/more_8.py" in second.files_read
    assert "Always answer in French." in second.summary


def test_rejected_summary_is_retried_with_a_stricter_prompt() -> None:
    conv = _long_chat()
    contradicting = GOOD_SUMMARY.replace("- Read src/file_0.py whole", "- Touch setup.cfg")
    be = ScriptedBackend([contradicting, GOOD_SUMMARY])
    ctl, _, _ = controller(be, _policy_for(conv, -1), **NO_PRUNE)
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "model"
    assert all(c.grammar is not None for c in be.calls)
    assert be.calls[0].grammar == be.calls[1].grammar
    assert "rejected" not in be.calls[0].messages[-1]["content"]
    retry = be.calls[1].messages[-1]["content"]
    assert "Your previous summary was rejected" in retry and "contradicts the user" in retry
    assert rec.rejected and "setup.cfg" in rec.rejected[0]


def test_sections_that_said_nothing_are_asked_for_again_alone() -> None:
    """The first reply's Goal and content say nothing; the retry asks for just those
    sections (under their own grammar, with their facts), keeps the rest, and the whole
    summary passes the same validation."""
    conv = _long_chat()
    first = FILLER_SUMMARY.replace("## Constraints & Preferences\n- none",
                                   "## Constraints & Preferences\n- Answer in French")
    be = ScriptedBackend([first, repair_from(GOOD_SUMMARY)])
    ctl, _, _ = controller(be, _policy_for(conv, -1), **NO_PRUNE)
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "model", rec and rec.rejected
    assert rec.rejected and "names nothing" in rec.rejected[0]
    retry = be.calls[1]
    asked = retry.messages[-1]["content"]
    assert "said nothing specific under: Goal, Done, In Progress, Next Steps, Critical " \
        "Context" in asked
    assert "Constraints & Preferences (the user's rules)" not in asked  # not asked again
    assert retry.grammar is not None and retry.grammar != be.calls[0].grammar
    assert "Constraints" not in retry.grammar and "## Goal" in retry.grammar
    summary = rec.summary
    assert "- Answer in French" in summary  # kept from the first reply
    assert "- Answer questions about src/file_0.py" in summary  # the repaired Goal
    assert "The user wants to continue" not in summary
    for heading in ("## Goal", "## Constraints & Preferences", "### Done", "## Key Decisions",
                    "## Next Steps", "## Critical Context"):
        assert summary.count(heading) == 1


def test_rejected_free_prompt_summary_is_retried_with_a_stricter_prompt() -> None:
    conv = _long_chat()
    be = ScriptedBackend(["blah", GOOD_SUMMARY])
    ctl, _, _ = controller(be, _policy_for(conv, -1), **_free(be))
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "model"
    assert all(c.grammar is None for c in be.calls)
    assert "IMPORTANT" not in be.calls[0].messages[-1]["content"]
    assert "IMPORTANT" in be.calls[1].messages[-1]["content"]
    assert "missing sections" in be.calls[1].messages[-1]["content"]


def test_twice_rejected_summary_falls_back_to_extractive() -> None:
    conv = _long_chat()
    be = ScriptedBackend([FILLER_SUMMARY, repair_from(FILLER_SUMMARY)])
    ctl, _, _ = controller(be, _policy_for(conv, -1), **NO_PRUNE)
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "extractive" and len(be.calls) == 2
    for section in ("## Goal", "## Constraints & Preferences", "## Progress", "## Next Steps"):
        assert section in rec.summary
    echo = lambda msgs: msgs[-1]["content"]  # noqa: E731 - repeats its input
    be2 = ScriptedBackend(["", echo])
    ctl2, _, _ = controller(be2, _policy_for(conv, -1), **_free(be2))
    rec2 = ctl2.compact(CallRequest(_long_chat(), SYSTEM), "manual")
    assert rec2 is not None and rec2.summarizer == "extractive" and len(be2.calls) == 2
    assert "Always answer in French." in rec.summary


def test_summary_stays_within_budget() -> None:
    conv = _long_chat()
    pol = _policy_for(conv, -1)
    be = ScriptedBackend([GOOD_SUMMARY * 5, GOOD_SUMMARY])  # too long: only without a grammar
    ctl, be, _ = controller(be, pol, **_free(be))
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None
    assert be.count(rec.summary) <= pol.summary_budget
    assert be.calls[0].max_tokens < pol.summary_budget


def test_cancel_before_and_during_summary() -> None:
    conv = _long_chat()
    pol = _policy_for(conv, -1)
    token = CancelToken()
    token.cancel()
    ctl, _be, events = controller(ScriptedBackend([GOOD_SUMMARY]), pol, **NO_PRUNE)
    req = ctl.prepare(CallRequest(conv, SYSTEM, cancel=token))
    assert req.compaction is None and not conv.compactions
    assert isinstance(events[-1], CompactionCancelled)
    assert len(req.messages) == len(conv.messages) + 1  # proceeds uncompacted

    token2 = CancelToken()

    def cancel_mid(msgs: list[dict[str, Any]]) -> str:
        token2.cancel()
        return GOOD_SUMMARY

    ctl2, _, events2 = controller(ScriptedBackend([cancel_mid]), pol, **NO_PRUNE)
    assert ctl2.compact(CallRequest(conv, SYSTEM, cancel=token2), "manual") is None
    assert isinstance(events2[-1], CompactionCancelled)
    assert not any(isinstance(e, CompactionFailed) for e in events2)


def test_summarizer_failure_is_logged_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    class Boom:
        def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> Any:
            raise RuntimeError("model crashed")

    conv = _long_chat()
    ctl, _, events = controller(policy=_policy_for(conv, -1), summarizer=Boom(), **NO_PRUNE)
    with caplog.at_level(logging.ERROR, logger="assistant.compaction"):
        req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.compaction is None
    failed = [e for e in events if isinstance(e, CompactionFailed)]
    assert failed and "model crashed" in failed[0].error
    assert any("Summarizer failed" in r.message for r in caplog.records)


def test_auto_compact_off_really_off() -> None:
    conv = _long_chat()
    be = ScriptedBackend([GOOD_SUMMARY])
    ctl, _, events = controller(
        be, _policy_for(conv, -1), switches=lambda: CompactionSwitches(
            prune=False, auto_compact=False, compact_on_overflow=False),
    )
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.compaction is None and not be.calls and not events
    assert any("automatic compaction is off" in n for n in req.notices)
    assert ctl.compact(CallRequest(conv, SYSTEM), "overflow") is None
    with pytest.raises(ContextTooLargeError) as err:
        ctl.handle_overflow(CallRequest(conv, SYSTEM))
    assert str(err.value).startswith("Context too large; compaction failed.")
    assert "system prompt" in str(err.value)  # says what cannot be compacted
    assert not be.calls
    assert ctl.compact(CallRequest(conv, SYSTEM), "manual") is not None  # /compact


def test_handle_overflow_compacts_once_then_refuses() -> None:
    conv = _long_chat()
    ctl, _, _ = controller(ScriptedBackend([GOOD_SUMMARY]), local_policy(), **NO_PRUNE)
    before = ctl.prepare(CallRequest(conv, SYSTEM)).prompt_tokens
    retry = ctl.handle_overflow(CallRequest(conv, SYSTEM))
    assert retry.compaction is not None and retry.compaction.reason == "overflow"
    assert retry.prompt_tokens < before
    with pytest.raises(ContextTooLargeError):
        ctl.handle_overflow(CallRequest(conv, SYSTEM))


def test_handle_overflow_cancelled_raises_generation_cancelled() -> None:
    conv = _long_chat()
    token = CancelToken()
    token.cancel()
    ctl, _, _ = controller(ScriptedBackend([GOOD_SUMMARY]), local_policy(), **NO_PRUNE)
    with pytest.raises(GenerationCancelled):
        ctl.handle_overflow(CallRequest(conv, SYSTEM, cancel=token))


def test_a_summary_too_long_for_the_reply_room_gives_way_to_the_record() -> None:
    """The chat is summarized whole and the summary would still leave the reply less than
    its reserve: the summary proper is cut (here to nothing, and with ten tokens of room the
    record is empty too), so the compaction shrinks the prompt instead of failing; the card
    says so."""
    calls: list[int] = []

    class Verbose:
        def summarize(self, request: SummaryRequest, cancel: CancelToken | None) -> Any:
            calls.append(1)
            return SummaryOutcome(text="word " * 5_000, kind="model")

    conv = Conversation()
    conv.append(Message(role="user", content="short"))
    conv.append(Message(role="assistant", content="ok"))
    conv.append(Message(role="user", content="again"))
    pol = local_policy(window=2_000, reserve=1_990, keep_recent=10, summary_budget=60)
    ctl, _, events = controller(policy=pol, summarizer=Verbose(), **NO_PRUNE)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert len(calls) == 1 and not [e for e in events if isinstance(e, CompactionFailed)]
    rec = conv.compactions[-1]
    assert rec.tokens_after < rec.tokens_before and req.prompt_tokens == rec.tokens_after
    assert "word" not in rec.summary
    assert rec.summarizer == "extractive" and "no room for a summary" in rec.summarizer_note
    assert summarizer_line(rec).startswith("Summary is only the record of what the user said")


def test_manual_compact_with_nothing_to_summarize_reports() -> None:
    conv = Conversation()
    conv.append(Message(role="user", content="hi"))
    ctl, _, events = controller()
    assert ctl.compact(CallRequest(conv, SYSTEM), "manual") is None
    assert isinstance(events[-1], CompactionFailed)


def test_split_turn_summarizes_the_prefix_separately() -> None:
    conv = Conversation()
    conv.append(Message(role="user", content="Set up the project. Never use global state."))
    conv.append(Message(role="assistant", content="Done."))
    conv.append(Message(role="user", content="Now read every module and report."))
    for i in range(10):
        turn = Conversation()
        _, asst, res, _ = tool_turn(turn, i, size=40)
        conv.append(asst)
        conv.append(res)
    conv.append(Message(role="assistant", content="All read."))
    pol = local_policy(window=2_600, reserve=300, keep_recent=900, summary_budget=500)
    setup = (
        "## Goal\n- Set up without global state\n## Constraints & Preferences\n- none\n"
        "## Progress\n### Done\n- Set up\n### In Progress\n- none\n### Blocked\n- none\n"
        "## Key Decisions\n- No global state\n## Next Steps\n- Read every module\n"
        "## Critical Context\n- src/file_0.py has no global state"
    )
    be = ScriptedBackend([setup, GOOD_SUMMARY])
    ctl, _, _ = controller(be, pol, **_free(be))
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and len(be.calls) == 2, rec and rec.rejected
    assert "FIRST PART of one long request" in be.calls[1].messages[-1]["content"]
    assert "Context of the current request" in rec.summary
    assert "Now read every module and report." in rec.summary  # last request, verbatim
    kept = conv.kept_messages()
    assert kept[0].role == "assistant"


def test_span_larger_than_the_window_is_summarized_in_chunks() -> None:
    conv = Conversation()
    for i in range(60):
        conv.append(Message(role="user", content=f"Note {i}: " + "detail " * 150))
        conv.append(Message(role="assistant", content=f"Noted {i}."))
    pol = local_policy(window=3_000, reserve=400, keep_recent=600, summary_budget=300)
    notes = (
        "## Goal\n- Noted every note\n\n## Constraints & Preferences\n- none\n\n"
        "## Progress\n### Done\n- Noted each note\n### In Progress\n- Noted more notes\n"
        "### Blocked\n- none\n\n## Key Decisions\n- Keep every note noted\n\n"
        "## Next Steps\n- Note the next note\n\n## Critical Context\n- Each note is noted"
    )
    be = ScriptedBackend([notes] * 20, window=3_000)
    ctl, _, _ = controller(be, pol, **_free(be))
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "model"
    assert len(be.calls) >= 3
    assert all(c.prompt_tokens + c.max_tokens <= 3_000 for c in be.calls)
    assert "<previous-summary>" in be.calls[1].messages[-1]["content"]


def test_extractive_summarizer_needs_no_model() -> None:
    conv = _long_chat()
    ctl, be, _ = controller(policy=_policy_for(conv, -1), **NO_PRUNE)
    ctl.summarizer = ExtractiveSummarizer(ctl.counter)
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "extractive" and not be.calls


def test_failed_and_cancelled_events_carry_numbers() -> None:
    conv = _long_chat()
    token = CancelToken()
    token.cancel()
    ctl, _, events = controller(policy=_policy_for(conv, -1), **NO_PRUNE)
    ctl.compact(CallRequest(conv, SYSTEM, cancel=token), "manual")
    assert isinstance(events[-1], CompactionCancelled) and events[-1].tokens_before > 0


def test_one_tool_output_bigger_than_the_window() -> None:
    conv = Conversation()
    conv.append(Message(role="user", content="Read huge.log. Never delete it."))
    _, asst, res, _ = tool_turn(Conversation(), 0, size=1_200)  # ~12k tokens
    conv.append(asst)
    conv.append(res)
    pol = local_policy()
    ctl, _be, _ = controller(ScriptedBackend([GOOD_SUMMARY]), pol)
    assert ctl.counter.message(res) > pol.window
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    # The model has not answered the read yet: it is cut to fit, never summarized away.
    assert req.compaction is None
    assert req.prompt_tokens + pol.reserve <= pol.window
    assert [m["role"] for m in req.messages] == ["system", "user", "assistant", "tool"]
    assert req.messages[1]["content"] == "Read huge.log. Never delete it."
    shown = req.messages[3]["content"]
    assert shown.startswith(res.content.split("\n")[0])  # the head
    assert shown.rstrip().endswith(res.content.rstrip("\n").split("\n")[-1])  # the tail
    assert "lines omitted here to fit the context window (file lines" in shown
    assert "call read_file path=src/file_0.py start_line=" in shown
    assert set(req.trimmed) == {res.id}


def test_a_looping_summary_is_stopped_early_and_rejected() -> None:
    conv = _long_chat()
    loop = GOOD_SUMMARY.split("## Critical")[0] + "- the very same line again and again\n" * 50
    be = ScriptedBackend([loop, GOOD_SUMMARY])
    ctl, _, _ = controller(be, _policy_for(conv, -1), **_free(be))
    rec = ctl.compact(CallRequest(conv, SYSTEM), "manual")
    assert rec is not None and rec.summarizer == "model"
    first = be.calls[0]
    assert first.result is None or first.result.completion_tokens < 120  # stopped early
    assert "repeating" in be.calls[1].messages[-1]["content"]


def test_model_is_not_asked_again_after_repeated_rejections() -> None:
    from assistant.compaction.summary.extractive import MechanicalState
    from assistant.compaction.summary.summarizer import GIVE_UP_AFTER

    conv = _long_chat()
    be = ScriptedBackend(default_reply=FILLER_SUMMARY)  # says nothing: always rejected
    summarizer = ModelSummarizer(be)
    request = SummaryRequest(
        history=conv.messages, turn_prefix=[], previous=None, focus=None, budget=300,
        state=MechanicalState(), window=be.window,
    )
    for round_ in range(GIVE_UP_AFTER):
        assert summarizer.summarize(request, None).kind == "extractive"
        assert len(be.calls) == 2 * (round_ + 1)  # asked, retried, then fell back
    calls = len(be.calls)
    outcome = summarizer.summarize(request, None)
    assert outcome.kind == "extractive" and len(be.calls) == calls  # not asked again
    assert "## Goal" in outcome.text
    assert outcome.note == (
        "by the extractive fallback: the model was not asked, its summaries were rejected in "
        f"{GIVE_UP_AFTER} compactions in a row"
    )
    # A model that starts writing good summaries is trusted again after a success.
    summarizer.consecutive_fallbacks = GIVE_UP_AFTER - 1
    be.enqueue(GOOD_SUMMARY)
    assert summarizer.summarize(request, None).kind == "model"
    assert summarizer.consecutive_fallbacks == 0
