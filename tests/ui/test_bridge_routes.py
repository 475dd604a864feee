"""Every service event reaches the window: the bridge's routes are keyed by the members of
the event union, the window routes each one (or says it does not show it), and an event
with no route is an error, not a silent drop (issue 42)."""

from __future__ import annotations

import threading
from typing import get_args

import pytest
from PySide6.QtCore import QCoreApplication

from assistant.agent.events import AssistantDelta, Notice
from assistant.service.events import ServiceEvent
from assistant.ui.bridge import EVENT_TYPES, ServiceBridge, UnroutedEvent


def test_the_bridge_knows_every_member_of_the_union() -> None:
    members = get_args(ServiceEvent)
    assert len(members) > 20  # the agent's events flattened in with the service's
    assert set(EVENT_TYPES) == set(members)


def test_every_event_type_of_the_union_has_a_route_in_the_window(make_window) -> None:
    h = make_window()
    unrouted = [t.__name__ for t in get_args(ServiceEvent) if not h.window.bridge.routed(t)]
    assert not unrouted, f"service events the window has no route for: {unrouted}"


def test_an_event_without_a_route_is_an_error(qtbot) -> None:
    bridge = ServiceBridge()
    with pytest.raises(UnroutedEvent, match="Notice"):
        bridge.deliver(Notice("info", "nobody listens"))
    with qtbot.captureExceptions() as raised:
        worker = threading.Thread(
            target=lambda: bridge.post(Notice("info", "nobody listens, through the queue")))
        worker.start()
        worker.join()
        QCoreApplication.processEvents()
    assert [type(e[1]) for e in raised] == [UnroutedEvent]


def test_a_route_is_only_for_an_event_type(qtbot) -> None:
    bridge = ServiceBridge()
    with pytest.raises(TypeError):
        bridge.on(str, print)


def test_ignored_types_are_routed_and_streamed_text_arrives_as_one_delta(qtbot) -> None:
    bridge = ServiceBridge()
    got: list[str] = []
    bridge.on(AssistantDelta, lambda event: got.append(event.text))
    bridge.ignore(Notice)
    bridge.post(AssistantDelta("a"))
    bridge.post(AssistantDelta("b"))
    bridge.post(Notice("info", "shown nowhere"))
    QCoreApplication.processEvents()
    assert bridge.routed(Notice)
    assert got == ["ab"]


def test_an_event_posted_on_the_gui_thread_waits_for_those_queued_before(qtbot) -> None:
    """Text streamed by the worker after its event, then an event posted on the GUI thread
    (as the service's measured context usage is): shown in that order (the direct delivery
    overtook the worker's queued event, and a reply's text showed before its question)."""
    bridge = ServiceBridge()
    order: list[str] = []
    bridge.on(AssistantDelta, lambda event: order.append(event.text))
    bridge.on(Notice, lambda event: order.append(event.text))
    worker = threading.Thread(target=lambda: (bridge.post(Notice("info", "question")),
                                              bridge.post(AssistantDelta("reply"))))
    worker.start()
    worker.join()
    bridge.post(Notice("info", "usage"))  # on the GUI thread, before the queue ran
    qtbot.waitUntil(lambda: len(order) == 3)
    assert order == ["question", "reply", "usage"]


def test_an_event_posted_on_an_idle_gui_thread_is_delivered_at_once(qtbot) -> None:
    bridge = ServiceBridge()
    got: list[str] = []
    bridge.on(Notice, lambda event: got.append(event.text))
    bridge.post(Notice("info", "now"))
    assert got == ["now"]


def test_a_status_is_shown_in_the_same_step_as_the_event_that_caused_it(qtbot) -> None:
    """The worker posts "Running read_file…" just before the reply that asks for the tool (its
    card): a GUI step between the two would show the status over the old bubble (seen in CI).
    Here the worker pauses between them while the GUI thread runs its loop."""
    from assistant.agent.events import MessageAdded
    from assistant.conversation import Message
    from assistant.service.events import StatusChanged
    from assistant.service.status import Phase, Status

    bridge = ServiceBridge()
    seen: list[str] = []
    bridge.on(StatusChanged, lambda event: seen.append(event.status.text))
    bridge.on(MessageAdded, lambda event: seen.append(event.message.content))
    bridge.on(AssistantDelta, lambda event: seen.append(event.text))
    posted = threading.Event()
    go_on = threading.Event()

    def worker() -> None:
        bridge.post(StatusChanged(Status(Phase.RUNNING_TOOL, "read_file"), leads=True))
        posted.set()
        go_on.wait(5)
        bridge.post(MessageAdded(Message(role="assistant", content="the call")))
        bridge.post(StatusChanged(Status(Phase.GENERATING), leads=True))
        bridge.post(AssistantDelta("First"))

    thread = threading.Thread(target=worker)
    thread.start()
    posted.wait(5)
    qtbot.wait(100)  # the GUI loop runs while the worker is between the two posts
    assert seen == []
    go_on.set()
    thread.join()
    qtbot.waitUntil(lambda: len(seen) == 4, timeout=5_000)
    assert seen == ["Running read_file…", "the call", "Writing the reply… (Esc to stop)", "First"]


def test_a_status_alone_is_shown_at_once(qtbot) -> None:
    """A status no event follows (a model load's progress) is not held."""
    from assistant.service.events import StatusChanged
    from assistant.service.status import Phase, Status

    bridge = ServiceBridge()
    seen: list[str] = []
    bridge.on(StatusChanged, lambda event: seen.append(event.status.text))
    thread = threading.Thread(target=lambda: bridge.post(StatusChanged(Status(Phase.IDLE))))
    thread.start()
    thread.join()
    qtbot.waitUntil(lambda: seen == ["Ready"], timeout=5_000)
