"""The assistant's words beside a recalled user message (issue 45, item 7): a date it worked
out, a name it suggested that the user accepted, come back behind the user's own words."""

from __future__ import annotations

from assistant.compaction.recall_rank import states_fact
from assistant.compaction.recall_replies import reply_sentence
from assistant.compaction.request import CallRequest
from assistant.conversation import Conversation, Message
from assistant.sessions.recall_text import query_terms
from tests.compaction.test_recall import SYSTEM, _controller

#: Exchanges of a personal chat, in the words of the answer benchmark's generated chats
#: (bench/personal_chats.py): the fact is only in the assistant's reply.
SISTER = (
    "(Tuesday 25 February 2025) My sister Noor is coming to stay with us! Her flight lands "
    "on Thursday next week, in the evening.",
    "How exciting! So Noor arrives on Thursday 6 March 2025, in the evening. Shall I help "
    "you plan her first days here?",
)
SPREADSHEET = (
    "We want one shared spreadsheet for our savings, but we cannot agree on a name for it. "
    "Any ideas?",
    'How about "Harbour Savings"? It is short, friendly and easy to find later.',
    "I love it, we will use that name.",
    "That sounds like a lot to carry at once. I am glad that went well for you.",
)


def _chat(*exchanges: tuple[str, ...], turns: int = 30) -> tuple[object, Conversation]:
    ctrl, _ = _controller()
    conv = Conversation()
    for exchange in exchanges:
        for i, text in enumerate(exchange):
            conv.append(Message(role="user" if i % 2 == 0 else "assistant", content=text))
    for i in range(turns):
        conv.append(Message(role="user", content=f"Work was busy again today, day {i}. " * 8))
        conv.append(Message(role="assistant", content="Try to rest this evening. " * 12))
        ctrl.prepare(CallRequest(conv, SYSTEM))
    assert conv.compactions
    return ctrl, conv


def _recalled(ctrl: object, conv: Conversation, question: str) -> str:
    conv.append(Message(role="user", content=question))
    req = ctrl.prepare(CallRequest(conv, SYSTEM))  # type: ignore[attr-defined]
    assert req.recall is not None, "nothing recalled"
    return str(req.recall.text)


def test_a_date_the_assistant_worked_out_comes_back_after_the_users_words() -> None:
    ctrl, conv = _chat(SISTER)
    assert "6 March" not in conv.compactions[-1].summary  # the record keeps the user's words
    block = _recalled(ctrl, conv, "On what date does my sister arrive?")
    lines = block.split("\n")[1:]
    assert "Noor is coming to stay with us" in lines[0]  # the user's words first
    assert lines[-1].endswith("So Noor arrives on Thursday 6 March 2025, in the evening.")
    assert "you replied" in lines[-1]
    assert "Shall I help" not in block  # only the sentence stating the fact


def test_a_name_the_user_accepted_comes_back_with_the_suggestion() -> None:
    ctrl, conv = _chat(SPREADSHEET)
    block = _recalled(ctrl, conv,
                      "What name did we choose for our shared savings spreadsheet?")
    assert '"Harbour Savings"' in block
    # The reply after "I love it" says nothing of it: it is not brought back.
    assert "carry at once" not in block


def test_which_sentence_of_a_reply_comes_back() -> None:
    asked = query_terms("On what date is the parent-teacher meeting?")
    reply = ("Of course. The meeting is on Monday 10 March 2025. You could ask how the kids "
             "are settling in and what they could practise at home.")
    assert reply_sentence(reply, asked) == "The meeting is on Monday 10 March 2025."
    # Prose with no fact and none of the question's words: nothing.
    assert reply_sentence("That sounds like a lot to carry at once. Try to rest.", asked) is None
    assert states_fact('How about "Harbour Savings"?')
    assert not states_fact("It is short, friendly and easy to find later.")
