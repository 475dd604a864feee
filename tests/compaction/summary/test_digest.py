"""The facts code picks for the summarizing model (:mod:`assistant.compaction.summary.digest`)."""

from __future__ import annotations

from assistant.compaction.summary import prompts
from assistant.compaction.summary.digest import gather
from assistant.compaction.summary.guided import GuidedRequest
from assistant.conversation import Message, ToolCall

FIRST = ("Ground rules for this whole chat: Never use tabs for indentation, always use four "
         "spaces. Always write dates as YYYY-MM-DD. Now, summarize src/core/partial_route.txt "
         "in one sentence.")
LATEST = "Which functions are defined in src/core/primary_policy.py? List their names."


def _span() -> list[Message]:
    call = ToolCall(id="c1", name="read_file", arguments={"path": "src/core/partial_route.txt"})
    return [
        Message(role="user", content=FIRST),
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", content="partial route notes", tool_call_id="c1", name="read_file"),
        Message(role="assistant", content="It describes the partial route."),
        Message(role="user", content=LATEST),
    ]


def test_a_request_fact_leaves_out_the_rules_stated_with_it() -> None:
    digest = gather(_span())
    assert digest.first_request == "Now, summarize src/core/partial_route.txt in one sentence."
    assert digest.latest_request == LATEST
    assert digest.rules[:2] == (
        "Ground rules for this whole chat: Never use tabs for indentation, always use four "
        "spaces.",
        "Always write dates as YYYY-MM-DD.",
    )
    assert digest.actions == ("The assistant used read_file on src/core/partial_route.txt.",)


def test_a_message_of_rules_only_is_its_own_request() -> None:
    digest = gather([Message(role="user", content="Never use tabs for indentation.")])
    assert digest.first_request == "Never use tabs for indentation."


def test_rules_recorded_before_the_span_are_constraint_facts() -> None:
    """The second compaction's span no longer holds the message that stated the rules; the
    model is still shown them under Constraints & Preferences."""
    later = _span()[1:]
    recorded = ["Keep every answer under 60 words."]
    request = GuidedRequest.build(later, [], previous=None, focus=None, budget=400,
                                  recorded_rules=recorded)
    assert request.fact_groups["Constraints & Preferences"][0] == recorded[0]
    block = request.facts
    assert "Constraints & Preferences (the user's rules):\n- Keep every answer under 60 words." \
        in block
    assert prompts.fact_groups(
        first_request="", latest_request="", rules=recorded, actions=(), last_reply="",
    )["Constraints & Preferences"] == recorded
