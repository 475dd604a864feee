"""Compaction ahead of time (assistant/compaction/ahead.py): the next compaction's summary
written while the model is idle, used at the threshold when its span is unchanged."""

from __future__ import annotations

from assistant.compaction.ahead import AHEAD_FILL
from assistant.compaction.controller import ContextController
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.summarizer import GIVE_UP_AFTER
from assistant.conversation import CompactionReason, CompactionRecord, Conversation, Message
from assistant.llm.base import CancelToken, GenerationOptions
from tests.fakes.scripted import ScriptedBackend

from .helpers import (
    GOOD_SUMMARY,
    SYSTEM,
    controller,
    local_policy,
    long_message,
    tool_turn,
    writes,
)

POLICY = local_policy(window=4000, reserve=500, keep_recent=900, summary_budget=400)
#: The shipped local policy at SmolLM2's 2,048-token effective context (the W2 benchmark's):
#: the kept tail's limit is ``keep_recent``, so a message larger than the one the summary
#: written ahead was planned for pushes the planned tail past it.
SMALL = local_policy(window=2048, reserve=210, keep_recent=614, summary_budget=157,
                     protect=409, minimum=102)


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
    assert ctl.summary_cache.preferred_cuts(ctl.facts.of(conv).kept) == []
    assert backend.save_state().tokens == before
    # Written to the end, the summary also leaves the chat's cache as it was.
    assert ctl.precompute(CallRequest(conv, SYSTEM)) is not None
    assert backend.save_state().tokens == before


def _near_threshold(size: int) -> tuple[ContextController, ScriptedBackend, Conversation]:
    """A chat on :data:`SMALL` past the fill level, its last turns pasted notes of about
    ``size`` tokens with short replies (as in W2), one such note short of the threshold."""
    ctl, backend, _ = controller(ScriptedBackend([writes(GOOD_SUMMARY)] * 30), SMALL)
    conv = Conversation()
    threshold = SMALL.window - SMALL.reserve

    def prompt() -> int:
        return ctl.measure(CallRequest(conv, SYSTEM)).prompt_tokens

    i = 0
    while prompt() < (AHEAD_FILL + 0.12) * threshold:
        tool_turn(conv, i, size=6)
        i += 1
    while prompt() < threshold - size - 20:
        conv.append(Message(role="user", content=long_message(backend, size)))
        conv.append(Message(role="assistant", content=f"Noted {i}."))
        i += 1
    return ctl, backend, conv


def _send(ctl: ContextController, conv: Conversation, text: str) -> CompactionRecord:
    conv.append(Message(role="user", content=text))
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.compaction is not None and req.compaction.reason == CompactionReason.THRESHOLD
    assert req.prompt_tokens + SMALL.reserve <= SMALL.window
    return req.compaction


def test_a_larger_message_than_planned_keeps_the_planned_cut() -> None:
    """W2's first compaction: the summary was planned for a message the size of the last
    one (89 tokens), the real one had 202, and the planned tail passed its limit; the
    compaction wrote its own summary. The planned cut now stays while its tail is within
    the limit plus the slack, and the summary written ahead is used whole."""
    ctl, backend, conv = _near_threshold(90)
    got = ctl.precompute(CallRequest(conv, SYSTEM))
    assert got is not None
    calls = len(backend.calls)
    record = _send(ctl, conv, long_message(backend, 300))
    assert len(backend.calls) == calls  # nothing was written inside the turn
    assert record.summarizer_note.endswith("written ahead of time, while the chat was idle")
    assert record.first_kept_id == got.first_kept_id


def test_a_summary_written_for_the_start_of_the_span_is_used() -> None:
    """A message so large that the cut must move past the planned one: the summary written
    ahead covers the start of the span, the rest is in the record of what the user said."""
    ctl, backend, conv = _near_threshold(90)
    got = ctl.precompute(CallRequest(conv, SYSTEM))
    assert got is not None
    planned = ctl.facts.of(conv).kept
    first = next(i for i, m in enumerate(planned) if m.id == got.first_kept_id)
    calls = len(backend.calls)
    record = _send(ctl, conv, long_message(backend, 450))
    assert len(backend.calls) == calls
    assert record.first_kept_id != got.first_kept_id
    covered = f"for the first {first} of the "
    assert covered in record.summarizer_note
    assert "others are in the record of what the user said" in record.summarizer_note
    # The messages summarized beyond the summary's part are in the verbatim record.
    summarized = conv.messages[: conv.index_of(record.last_summarized_id) + 1]
    late = [m for m in summarized[first:] if m.role == "user"]
    assert late and any(m.content.splitlines()[0] in record.summary for m in late)
    assert "src/file_0.py" in record.summary  # the model's part, written ahead


def _copy(conv: Conversation, index: int, content: str, *, new_id: bool) -> Conversation:
    """The chat with message ``index`` edited in place (same id) or on a new branch."""
    messages = list(conv.messages)
    old = messages[index]
    update: dict[str, object] = {"content": content}
    if new_id:
        update["id"] = Message(role=old.role, content=content).id
    messages[index] = old.model_copy(update=update)
    return Conversation(messages=messages, compactions=list(conv.compactions))


def test_a_summary_of_a_chat_that_changed_under_it_is_not_used() -> None:
    for new_id in (False, True):
        ctl, backend, conv = _near_threshold(90)
        assert ctl.precompute(CallRequest(conv, SYSTEM)) is not None
        # An early question edited (the same message, other text; or a new branch).
        changed = _copy(conv, 0, "Question 0 about src/other.py, edited.", new_id=new_id)
        assert ctl.summary_cache.preferred_cuts(ctl.facts.of(changed).kept) == []
        calls = len(backend.calls)
        record = _send(ctl, changed, long_message(backend, 200))
        assert len(backend.calls) > calls  # written in the turn, for the chat as it is
        assert "ahead of time" not in record.summarizer_note


def test_which_summary_written_ahead_fits_a_span() -> None:
    """SummaryCache.take: the whole span or its start (at least half of it), the same
    previous summary, focus and window, and a text within the model part's budget."""
    from assistant.compaction.ahead import Precomputed, SummaryCache
    from assistant.compaction.summary import MechanicalState, SummaryOutcome, SummaryRequest

    chat = [Message(role="user" if i % 2 == 0 else "assistant", content=f"message {i}")
            for i in range(10)]

    def request(n: int, *, budget: int = 100, focus: str | None = None) -> SummaryRequest:
        return SummaryRequest(history=chat[:n], turn_prefix=(), previous=None, focus=focus,
                              budget=budget, state=MechanicalState(), window=2048)

    def written(n: int, text: str, budget: int = 100) -> Precomputed:
        return Precomputed.of(request(n, budget=budget), chat[n].id,
                              SummaryOutcome(text=text, kind="model"), 1.0)

    def short(text: str) -> bool:
        return len(text) <= 10

    cache = SummaryCache()
    cache.put(written(4, "four"))
    cache.put(written(6, "six"))
    whole = cache.take(request(6), short)
    assert whole is not None and whole.whole and whole.outcome.text == "six"
    start = cache.take(request(8), short)  # the longest start: 6 of 8
    assert start is not None and (start.covered, start.span, start.outcome.text) == (6, 8, "six")
    assert cache.take(request(5), short) is not None  # "four" covers 4 of 5
    assert cache.take(request(3), short) is None  # none is a start of a shorter span
    assert cache.take(request(6, focus="the tests"), short) is None  # another focus
    cache.clear()
    cache.put(written(2, "two"))
    assert cache.take(request(5), short) is None  # 2 of 5: less than half
    assert cache.preferred_cuts(chat) == [2]
    cache.clear()
    cache.put(written(4, "a long summary", budget=200))
    assert cache.take(request(4), short) is None  # written for a larger model part
    assert cache.take(request(4, budget=200), short) is not None
    assert cache.preferred_cuts(chat) == [4]
    edited = [*chat[:1], chat[1].model_copy(update={"content": "changed"}), *chat[2:]]
    assert cache.preferred_cuts(edited) == []


# -- the model's summary left to idle time (issue 26) --------------------------------------


def _to_threshold(ctl: ContextController, conv: Conversation, start: int) -> int:
    """Tool turns until one more question takes the chat past the threshold."""
    threshold = POLICY.window - POLICY.reserve
    i = start
    while ctl.measure(CallRequest(conv, SYSTEM)).prompt_tokens < threshold - 40:
        tool_turn(conv, i, size=4)
        i += 1
    return i


def test_the_turn_takes_the_code_summary_and_the_model_writes_the_next_one_ahead() -> None:
    """With the model's summary left to idle time (the window, writing ahead on): a
    compaction in the turn that has no summary written ahead takes the code's summary at
    once, without asking the model; the next reading pause writes the model's summary of
    the next span on top of it, and the next compaction uses that one (design (a):
    ``compaction/ahead.py``)."""
    from assistant.compaction.summary import DEFERRED_NOTE, model_part

    ctl, backend, _ = controller(ScriptedBackend([writes(GOOD_SUMMARY)] * 30), POLICY)
    ctl.defer_model = lambda: True  # as the service sets it
    conv = Conversation()
    i = _to_threshold(ctl, conv, 0)  # no reading pause wrote anything ahead
    conv.append(Message(role="user", content="And what about file 3?"))
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    first = req.compaction
    assert first is not None and first.reason == CompactionReason.THRESHOLD
    assert backend.calls == []  # the model was not asked for a summary inside the turn
    assert first.summarizer == "extractive" and first.summarizer_note == DEFERRED_NOTE
    assert "Question 0 about src/file_0.py." in first.summary  # the user's words, verbatim
    assert req.prompt_tokens + POLICY.reserve <= POLICY.window
    # The user reads the reply: once the chat is near its next compaction, the idle writer
    # asks the model, on top of the code's summary.
    conv.append(Message(role="assistant", content="Answer."))
    got = None
    while got is None:
        tool_turn(conv, i, size=4)
        i += 1
        got = ctl.precompute(CallRequest(conv, SYSTEM))
        assert i < 200, "nothing was written ahead"
    assert got.outcome.kind == "model"
    asked = [c for c in backend.calls if c.grammar is not None]
    assert asked and model_part(first.summary).splitlines()[0] in asked[-1].prompt_text
    # Turn after turn, each reading pause writing ahead, until a question compacts.
    second = None
    while second is None:
        tool_turn(conv, i, size=4)
        i += 1
        ctl.precompute(CallRequest(conv, SYSTEM))
        calls = len(backend.calls)
        conv.append(Message(role="user", content=f"And file {i}?"))
        second = ctl.prepare(CallRequest(conv, SYSTEM)).compaction
        conv.append(Message(role="assistant", content="Answer."))
        assert i < 300, "the chat never compacted again"
    assert len(conv.compactions) == 2
    assert len(backend.calls) == calls  # nothing written inside this turn either
    assert second.summarizer == "model"
    assert "written ahead of time" in second.summarizer_note
    assert "src/file_0.py has words" in second.summary  # the model's part


def test_the_model_writes_it_in_the_turn_when_not_deferred_or_asked_for() -> None:
    """Deferring off (the terminal chat, the setting off) asks the model inside the turn, as
    does /compact (the user asked for it, with a focus) with deferring on."""
    for defer in (False, True):
        ctl, backend, _ = controller(ScriptedBackend([writes(GOOD_SUMMARY)] * 30), POLICY)
        ctl.defer_model = lambda defer=defer: defer  # as the service sets it
        conv = Conversation()
        _to_threshold(ctl, conv, 0)
        if defer:
            record = ctl.compact(CallRequest(conv, SYSTEM, focus="the files under src/"),
                                 CompactionReason.MANUAL)
        else:
            conv.append(Message(role="user", content="And what about file 3?"))
            record = ctl.prepare(CallRequest(conv, SYSTEM)).compaction
        assert record is not None
        assert _summary_calls(backend) >= 1
        assert record.summarizer == "model" and "written by the model" in record.summarizer_note


def test_a_model_given_up_on_keeps_its_own_note() -> None:
    """When the model is no longer asked (its summaries rejected in compactions in a row)
    the card says so, not that the model writes the next one."""
    from assistant.compaction.summary import DEFERRED_NOTE, ModelSummarizer

    ctl, backend, _ = controller(ScriptedBackend([writes(GOOD_SUMMARY)] * 30), POLICY)
    ctl.defer_model = lambda: True  # as the service sets it
    assert isinstance(ctl.summarizer, ModelSummarizer)
    ctl.summarizer.consecutive_fallbacks = GIVE_UP_AFTER
    conv = Conversation()
    _to_threshold(ctl, conv, 0)
    conv.append(Message(role="user", content="And what about file 3?"))
    record = ctl.prepare(CallRequest(conv, SYSTEM)).compaction
    assert record is not None and backend.calls == []
    assert record.summarizer_note != DEFERRED_NOTE and "was not asked" in record.summarizer_note


def test_an_overflow_in_the_turn_does_not_wait_for_the_model_either() -> None:
    """The model's window was smaller than counted (the backend said so): the compaction
    and retry happen inside the turn, with the code's summary."""
    from assistant.compaction.summary import DEFERRED_NOTE

    ctl, backend, _ = controller(ScriptedBackend([writes(GOOD_SUMMARY)] * 30), POLICY)
    ctl.defer_model = lambda: True  # as the service sets it
    conv = Conversation()
    _to_threshold(ctl, conv, 0)
    conv.append(Message(role="user", content="And what about file 3?"))
    retry = ctl.handle_overflow(CallRequest(conv, SYSTEM))
    assert retry.compaction is not None and retry.compaction.reason == "overflow"
    assert retry.compaction.summarizer_note == DEFERRED_NOTE and backend.calls == []
