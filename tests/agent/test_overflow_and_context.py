"""Overflow retry, context events and /compact, with a stand-in controller."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from assistant.agent.events import ContextChanged, ContextUsage, Notice, TurnFinished
from assistant.agent.loop import OVERFLOW_NO_COMPACT
from assistant.agent.overflow import GENERIC as OVERFLOW_FAILED
from assistant.compaction.controller import ContextTooLargeError
from assistant.compaction.events import ContextEvent, PruneEvent
from assistant.compaction.request import CallRequest, MessageFit, PreparedRequest
from assistant.config import EffectivePolicy, Settings
from assistant.conversation import CompactionRecord
from assistant.engine import build_engine
from assistant.llm.base import ContextOverflowError, StreamEvent
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness


class OverflowingBackend(ScriptedBackend):
    """Raises ContextOverflowError on the first ``overflows`` calls."""

    overflows: int = 0

    def generate(self, messages: Any, options: Any, **kw: Any) -> Iterator[StreamEvent]:
        if self.overflows > 0:
            self.overflows -= 1
            raise ContextOverflowError(20_000, self.window)
        return super().generate(messages, options, **kw)


class StubController:
    """Prepares plain requests; handle_overflow succeeds or fails as told."""

    def __init__(self, backend: ScriptedBackend, *, overflow_ok: bool = True) -> None:
        self.backend = backend
        self.overflow_ok = overflow_ok
        self.on_event: Callable[[ContextEvent], None] | None = None
        self.prepared = 0
        self.overflow_calls = 0
        self.compact_calls: list[tuple[str, str | None]] = []
        self.emit_on_prepare: ContextEvent | None = None
        self.window = 8192
        self.reserve = 1024

    def policy(self) -> EffectivePolicy:
        return Settings().effective_policy(self.window)

    def _request(self, call: CallRequest) -> PreparedRequest:
        msgs = [{"role": "system", "content": call.system_prompt}]
        msgs += [m.to_openai() for m in call.conv.kept_messages()]
        n = self.backend.count_prompt(msgs, call.tools)
        return PreparedRequest(
            messages=msgs, prompt_tokens=n, window=self.window, reserve=self.reserve
        )

    def message_fit(self, call: CallRequest, text: str) -> MessageFit:
        return MessageFit(self.backend.count(text), self.window - self.reserve)

    def prepare(self, call: CallRequest) -> PreparedRequest:
        self.prepared += 1
        if self.emit_on_prepare is not None and self.on_event is not None:
            self.on_event(self.emit_on_prepare)
        return self._request(call)

    def compact(self, call: CallRequest, reason: Any) -> CompactionRecord | None:
        self.compact_calls.append((reason, call.focus))
        return None

    def handle_overflow(self, call: CallRequest) -> PreparedRequest:
        self.overflow_calls += 1
        if not self.overflow_ok:
            raise ContextTooLargeError("the summary did not make the prompt smaller")
        return self._request(call)


def _make(settings: Settings, overflows: int, *, ok: bool = True) -> tuple[Harness, Any, Any]:
    backend = OverflowingBackend(["Answer after compaction."])
    backend.overflows = overflows
    controller = StubController(backend, overflow_ok=ok)
    return Harness(settings, backend=backend, controller=controller), backend, controller


def test_overflow_compacts_and_retries_once(settings: Settings) -> None:
    h, _backend, controller = _make(settings, overflows=1)
    h.say("big question")
    assert controller.overflow_calls == 1
    assert controller.prepared == 1  # the retry uses handle_overflow's request
    assert h.roles() == ["user", "assistant"]
    assert h.conv.messages[1].content == "Answer after compaction."
    assert len(h.events.of(ContextUsage)) == 2
    assert h.events.of(TurnFinished) == [TurnFinished()]


def test_second_overflow_is_a_clear_error_and_keeps_the_message(settings: Settings) -> None:
    h, _backend, controller = _make(settings, overflows=2)
    h.say("big question")
    assert controller.overflow_calls == 1
    assert h.roles() == ["user"]
    assert h.conv.messages[0].content == "big question"
    errors = [n.text for n in h.events.of(Notice) if n.level == "error"]
    assert errors == [OVERFLOW_FAILED]
    assert h.events.of(TurnFinished) == [TurnFinished(error=OVERFLOW_FAILED)]


def test_failed_compaction_is_the_same_error(settings: Settings) -> None:
    h, _backend, controller = _make(settings, overflows=1, ok=False)
    h.say("big question")
    assert controller.overflow_calls == 1
    assert [n.text for n in h.events.of(Notice)] == [OVERFLOW_FAILED]
    assert h.roles() == ["user"]


def test_overflow_switch_off_does_not_compact(settings: Settings) -> None:
    settings.compaction.compact_on_overflow = False
    h, _backend, controller = _make(settings, overflows=1)
    h.say("big question")
    assert controller.overflow_calls == 0
    assert [n.text for n in h.events.of(Notice)] == [OVERFLOW_NO_COMPACT]


def test_controller_events_reach_the_agent_through_the_composition_root(
    settings: Settings,
) -> None:
    """The agent never swaps the controller's handler; build_engine connects it."""
    backend = ScriptedBackend(["ok"])
    controller = StubController(backend)
    seen: list[ContextEvent] = []
    controller.on_event = seen.append
    event = PruneEvent(("m1",), 1234)
    controller.emit_on_prepare = event
    h = Harness(settings, backend=backend, controller=controller, wire_events=False)
    assert controller.on_event == seen.append  # untouched by the Agent
    h.say("hi")
    assert seen == [event]
    assert h.events.of(ContextChanged) == []
    # Connected as the composition root does it:
    engine = build_engine(backend, lambda: settings, None, h.events)
    assert engine.controller.on_event == engine.agent.on_context_event
    controller.on_event = h.agent.on_context_event
    backend.enqueue("ok")
    h.say("hi")
    assert h.events.of(ContextChanged) == [ContextChanged(event)]


def test_window_and_reply_room_come_from_the_prepared_request(settings: Settings) -> None:
    backend = ScriptedBackend(["ok"])
    controller = StubController(backend)
    controller.window, controller.reserve = 6_000, 37
    h = Harness(settings, backend=backend, controller=controller)
    h.say("hi")
    usage = h.events.of(ContextUsage)[0]
    assert (usage.window, usage.reserve) == (6_000, 37)
    assert backend.calls[0].max_tokens == 37


def test_compact_command_goes_to_the_controller(settings: Settings) -> None:
    backend = ScriptedBackend()
    controller = StubController(backend)
    h = Harness(settings, backend=backend, controller=controller)
    assert h.say("/compact keep the numbers") is None
    assert controller.compact_calls == [("manual", "keep the numbers")]
    assert any("Nothing to compact" in n.text for n in h.events.of(Notice))
    assert h.events.of(TurnFinished) == [TurnFinished()]
    assert not backend.calls


def test_real_controller_overflow_with_nothing_to_summarize(settings: Settings) -> None:
    """The real controller refuses (nothing older to summarize): a clear error, no loop."""
    backend = OverflowingBackend(["never"])
    backend.overflows = 5
    h = Harness(settings, backend=backend)
    h.say("hello")
    errors = [n.text for n in h.events.of(Notice) if n.level == "error"]
    assert len(errors) == 1
    assert "What cannot be compacted: the system prompt (" in errors[0]
    assert "The newest message is too long for this window" in errors[0]
    assert h.roles() == ["user"]
    assert backend.overflows == 4  # exactly one model call


def test_a_system_prompt_too_large_to_fit_says_so(settings: Settings) -> None:
    """A 200 KB system prompt: compaction cannot shrink it, and the error says that and
    where to fix it (it said only "compaction failed" before)."""
    settings.system_prompt = "Be careful. " * 17_000
    h = Harness(settings, ["never sent"])
    h.say("hello")
    errors = [n.text for n in h.events.of(Notice) if n.level == "error"]
    assert len(errors) == 1
    text = errors[0]
    assert text.startswith("The prompt (")
    assert "What cannot be compacted: the system prompt (" in text
    assert "The system prompt alone leaves no room: shorten it in Settings" in text
    assert h.roles() == ["user"]  # the message is kept
    assert h.events.of(TurnFinished)[-1].error == text
