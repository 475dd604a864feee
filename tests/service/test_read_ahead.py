"""Reading the message ahead while it is typed (``ChatService.draft_changed``,
:mod:`assistant.service.read_ahead`): the engine is warmed with the prompt of the words
typed so far while it is idle, never during a job, and a send stops it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from assistant.config import Settings
from assistant.service.read_ahead import typed_words
from tests.fakes.scripted import ScriptedBackend

from .conftest import Rig

Make = Callable[..., Rig]


def _draft_of(backend: ScriptedBackend, i: int = -1) -> str:
    return str(backend.warms[i].messages[-1]["content"])


def test_the_finished_words_are_read_not_the_word_being_typed() -> None:
    assert typed_words("What is the cap") == "What is the"
    assert typed_words("What is the capital ") == "What is the capital"
    assert typed_words("Line one\nand") == "Line one"
    assert typed_words("word") == typed_words("") == typed_words("/compact the start") == ""


def test_idle_the_draft_is_warmed_and_the_send_evaluates_only_the_rest(make_rig: Make) -> None:
    rig = make_rig("Hello!", "Paris.")
    be = rig.backend
    assert rig.service.submit("Hi, I am planning a trip.")
    sent_before = len(be.calls)
    text = ""
    for key in "What is the capital of France?":  # typed one key at a time
        text += key
        rig.service.draft_changed(text)
    # One read per finished word, each the prompt the send would make for the words so far.
    assert [_draft_of(be, i) for i in range(len(be.warms))] == [
        "What", "What is", "What is the", "What is the capital", "What is the capital of"]
    assert len(be.calls) == sent_before  # no reply was asked for
    assert be.warms[-1].messages[:-1] == [*be.calls[-1].messages,
                                          {"role": "assistant", "content": "Hello!"}]
    assert rig.service.submit("What is the capital of France?")
    result = be.calls[-1].result
    assert result is not None and result.text == "Paris."
    # The cache held the draft's prompt up to "...of": " France?" and the template's end
    # (its cl100k tokens) were left.
    assert be.calls[-1].prompt_text.startswith(be.warms[-1].prompt_text.split(" of")[0])
    assert result.prompt_evaluated <= 16 < be.warms[-1].prompt_tokens - 16 < result.prompt_reused


def test_off_nothing_is_read(make_rig: Make, tmp_path: Path) -> None:
    settings = Settings(workspace=str(tmp_path / "ws"))
    settings.compaction.read_ahead = False
    rig = make_rig(settings=settings)
    rig.service.draft_changed("What is the capital of France?")
    assert rig.backend.warms == []


def test_nothing_is_read_during_a_reply_and_the_words_typed_meanwhile_are_read_after(
    make_rig: Make,
) -> None:
    be = ScriptedBackend(["A long reply " * 8], delay_per_token=0.02)
    rig = make_rig(backend=be, threaded=True)
    assert rig.service.submit("Tell me a story.")
    assert rig.service.jobs.busy
    rig.service.draft_changed("And then what happened")
    assert rig.loop is not None
    rig.loop.run_until(lambda: bool(be.calls) and be.calls[-1].result is not None)
    assert be.warms == []  # the reply was being written
    rig.idle()
    rig.loop.run_until(lambda: bool(be.warms) and rig.service.drafts._running is None)
    assert [_draft_of(be, i) for i in range(len(be.warms))] == ["And then what"]
    assert "A long reply" in str(be.warms[0].messages[-2]["content"])  # after the reply


def test_a_send_stops_the_read_in_flight_keeping_what_it_did(make_rig: Make) -> None:
    be = ScriptedBackend(["Sure."], prefill_batch=4, delay_per_batch=0.05)
    rig = make_rig(backend=be, threaded=True)
    long = "Please summarize " + "the following words carefully " * 20 + "now"
    rig.service.draft_changed(long)
    assert rig.service.drafts._running is not None
    time.sleep(0.2)  # a few batches of the read
    assert rig.service.submit(long)
    assert rig.loop is not None
    rig.loop.run_until(lambda: bool(be.calls) and be.calls[-1].result is not None)
    rig.idle()
    read = rig.service.drafts.last
    assert read is not None and not read.finished  # stopped by the send ...
    assert 0 < read.evaluated < read.prompt_tokens - 4
    result = be.calls[-1].result
    assert result is not None and result.text == "Sure."
    assert result.prompt_reused == read.reused + read.evaluated  # ... what it read was kept
