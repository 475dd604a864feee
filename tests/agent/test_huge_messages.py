"""A chat holding a message of tens of MB answers like any other (issue 28 item 6): the
model is shown the message cut (head and tail, a note saying what was left out and where
the rest is), the chat file keeps it whole, and the work of a turn does not grow with the
message (it is cut by characters before anything tokenizes it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from assistant.agent.events import ContextChanged, MessageRefused
from assistant.compaction.events import TrimEvent, trim_text
from assistant.conversation import MAX_SHOWN_CHARS, Message, ToolCall
from assistant.sessions import SessionStore
from tests.compaction.helpers import shown_outputs
from tests.fakes.scripted import ScriptedBackend

from .conftest import Harness

Make = Callable[..., Harness]

MB = 1_000_000


class MeteredBackend(ScriptedBackend):
    """The scripted backend, counting the characters it is asked to tokenize."""

    tokenized_chars: int = 0

    def tokenize(self, text: str) -> list[int]:
        self.tokenized_chars += len(text)
        return super().tokenize(text)

    def count(self, text: str) -> int:
        self.tokenized_chars += len(text)
        return super().count(text)


def _log(size: int) -> str:
    line = "2026-11-26 05:00:00 INFO worker 7 handled request /api/items in 12 ms\n"
    text = line * (size // len(line) + 1)
    return "Why is this log so slow?\n" + text[:size] + "\nERROR at the very end: disk full"


#: Characters a turn may tokenize whatever the message size: a few passes over what the
#: model can be shown of one message, never the message itself.
WORK_BOUND = 40 * MAX_SHOWN_CHARS


def test_a_chat_holding_a_50_mb_user_message_answers_it_and_keeps_it_whole(
    harness: Make, tmp_path: Path
) -> None:
    """A chat written before messages were checked for size (or imported) holds a 50 MB
    message the model has not answered: answering it shows the model its head and tail."""
    store = SessionStore()
    text = _log(50 * MB)
    backend = MeteredBackend(["It is the disk: the last line says it is full.", "You're welcome."])
    with store.create() as chat:
        chat.conversation.append(Message(role="user", content=text))
        h = harness(backend=backend)
        h.conv = chat.conversation
        h.agent.respond(h.conv)
        assert h.roles() == ["user", "assistant"]
        assert h.conv.messages[-1].content.startswith("It is the disk")
        assert backend.tokenized_chars < WORK_BOUND
        # What the model was shown: the head, a note, the tail (the question and the end).
        shown = backend.calls[-1].messages[-1]["content"]
        assert shown.startswith("Why is this log so slow?")
        assert shown.endswith("ERROR at the very end: disk full")
        assert "omitted here" in shown and "kept in the chat" in shown
        assert backend.calls[-1].prompt_tokens < backend.window
        # The user is told (the window's notice line, the terminal's [context] line).
        (cut,) = [e.event for e in h.events.of(ContextChanged) if isinstance(e.event, TrimEvent)]
        assert cut.message_ids == (h.conv.messages[0].id,)
        assert "the chat keeps them whole" in trim_text(cut)
        # The next turn costs no more.
        before = backend.tokenized_chars
        h.say("Thanks.")
        assert h.conv.messages[-1].content == "You're welcome."
        assert backend.tokenized_chars - before < WORK_BOUND
        chat_id, path = chat.chat_id, chat.path
    assert path.stat().st_size > 50 * MB
    with store.open(chat_id) as chat:
        assert chat.conversation.messages[0].content == text
    store.close_all()


def test_typing_a_50_mb_message_is_refused_with_its_size_and_bounded_work(
    harness: Make,
) -> None:
    """The latest message is never cut (issue 26): one this large is refused before it is
    saved or sent, its size estimated from what would be shown, not tokenized whole."""
    backend = MeteredBackend(["unused"])
    h = harness(backend=backend)
    h.say(_log(50 * MB))
    assert h.roles() == [] and backend.calls == []
    assert backend.tokenized_chars < WORK_BOUND
    (refused,) = h.events.of(MessageRefused)
    assert refused.tokens > 1_000_000 > refused.room


def test_a_chat_holding_a_50_mb_tool_output_reopens_and_answers(harness: Make) -> None:
    """An output this large can only come from an old or imported chat (tools cap theirs):
    it is cut like any output, with how to read the rest."""
    store = SessionStore()
    output = _log(50 * MB)
    with store.create() as chat:
        call = ToolCall(name="read_file", arguments={"path": "server.log"})
        chat.conversation.append(Message(role="user", content="Read server.log"))
        chat.conversation.append(Message(role="assistant", tool_calls=[call]))
        chat.conversation.append(
            Message(role="tool", tool_call_id=call.id, name="read_file", content=output)
        )
        chat_id = chat.chat_id
    backend = MeteredBackend(["The disk is full."])
    with store.open(chat_id) as chat:
        h = harness(backend=backend)
        h.conv = chat.conversation
        h.say("What went wrong?")
        assert h.conv.messages[-1].content == "The disk is full."
        assert backend.tokenized_chars < WORK_BOUND
        shown = shown_outputs(backend.calls[-1].messages)[0]  # an earlier turn's output
        assert "omitted here" in shown and "read_file" in shown
    with store.open(chat_id) as chat:
        assert chat.conversation.messages[2].content == output
    store.close_all()


@pytest.mark.parametrize("size", [MAX_SHOWN_CHARS // 2, 2 * MAX_SHOWN_CHARS])
def test_a_held_message_longer_than_the_window_is_cut_to_fit_it(harness: Make, size: int) -> None:
    """Below the character cut too: a message in the chat that cannot fit the window is cut
    by tokens to three quarters of the room beside the reply, the same way on every call
    (typed now, it would be refused: see above)."""
    backend = MeteredBackend(["One.", "Two."])
    h = harness(backend=backend)
    h.conv.append(Message(role="user", content=_log(size)))
    h.agent.respond(h.conv)
    h.say("And?")
    first, second = (c.messages[1]["content"] for c in backend.calls)
    assert first == second  # the KV cache keeps its prefix
    assert "omitted here to fit the context window" in first
    cap = h.controller.message_cap()
    assert h.controller.counter.text(first) <= cap
    assert backend.calls[-1].prompt_tokens + h.controller.policy().reserve <= backend.window


def test_a_message_that_fits_is_shown_whole(harness: Make) -> None:
    h = harness("Fine.")
    text = _log(5_000)
    h.say(text)
    assert h.backend.calls[-1].messages[1]["content"] == text


def test_a_huge_reply_in_the_chat_is_cut_like_the_rest(harness: Make) -> None:
    """A reply no model here could write (a server's, an import's): shown cut, never
    summarized whole, and the next question is answered."""
    backend = MeteredBackend(["Short answer."])
    h = harness(backend=backend)
    h.conv.append(Message(role="user", content="Tell me everything."))
    h.conv.append(Message(role="assistant", content=_log(5 * MB)))
    h.say("In one line?")
    assert h.conv.messages[-1].content == "Short answer."
    assert backend.tokenized_chars < WORK_BOUND
    shown = backend.calls[-1].messages[2]["content"]
    assert "omitted here to fit the context window (reply lines" in shown
    assert h.conv.compactions == []
