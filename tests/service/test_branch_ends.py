"""Branch ends through the service: after the last message of a branch is deleted, the
place after the message before it has two versions (the deleted message, and the end),
and both can be shown and continued; ordinary branches are counted as before."""

from __future__ import annotations

from collections.abc import Callable

from .conftest import Rig

Make = Callable[..., Rig]


def _contents(rig: Rig) -> list[str]:
    return [m.content for m in rig.service.chat.shown_conversation.messages]


def test_deleting_the_last_message_leaves_a_way_back(make_rig: Make) -> None:
    rig = make_rig("answer one", "answer two", "answer three")
    s = rig.service
    s.submit("question one")
    s.submit("question two")
    answer = s.chat.conversation.messages[3]
    assert s.chat.branch_end() is None and s.chat.branch_info(answer.id) == (1, 1)
    s.delete_message(answer.id)
    assert _contents(rig) == ["question one", "answer one", "question two"]
    assert s.chat.branch_end() == (2, 2, answer.id)
    assert s.chat.branch_info(answer.id) == (1, 2)  # the end counts as its other version
    s.switch_branch(answer.id, 0)  # the end row's <
    assert _contents(rig)[-1] == "answer two" and s.browsing
    assert s.chat.branch_end() is None
    s.switch_branch(answer.id, 1)  # > back to the end: the chat's own branch
    assert not s.browsing and s.chat.branch_end() == (2, 2, answer.id)
    # Continuing from the end makes the new message a version of the same place.
    s.submit("question three")
    new = s.chat.conversation.messages[3]
    assert new.content == "question three"
    assert s.chat.branch_info(new.id) == (2, 2) and s.chat.branch_info(answer.id) == (1, 2)
    assert s.chat.branch_end() is None


def test_continuing_on_the_deleted_version_keeps_the_end_reachable(make_rig: Make) -> None:
    rig = make_rig("answer one", "answer two")
    s = rig.service
    s.submit("question one")
    answer = s.chat.conversation.messages[1]
    s.delete_message(answer.id)
    s.switch_branch(answer.id, 0)
    s.submit("question two")  # continues the version with the answer
    assert [m.content for m in s.chat.conversation.messages] == [
        "question one", "answer one", "question two", "answer two"
    ]
    assert s.chat.branch_info(answer.id) == (1, 2) and s.chat.branch_end() is None
    s.switch_branch(answer.id, 1)
    assert _contents(rig) == ["question one"] and s.chat.branch_end() == (2, 2, answer.id)


def test_a_regeneration_is_two_versions_without_an_end(make_rig: Make) -> None:
    rig = make_rig("first", "second")
    s = rig.service
    s.submit("question")
    s.regenerate(s.chat.conversation.messages[1].id)
    reply = s.chat.conversation.messages[1]
    assert reply.content == "second"
    assert s.chat.branch_info(reply.id) == (2, 2) and s.chat.branch_end() is None
