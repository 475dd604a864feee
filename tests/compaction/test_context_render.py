"""The prompt's earlier turns: tool calls as notes, one-line answers left out beside recall."""

from __future__ import annotations

from typing import Any

from assistant.compaction.context_render import (
    FOCUS_TOKENS,
    call_note,
    focus_history,
    render_history,
)
from assistant.compaction.controller import ContextController
from assistant.compaction.recall import Recall
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.summarizer import ExtractiveSummarizer
from assistant.config import CompactionSwitches, Settings, default_local
from assistant.conversation import Conversation, Message, ToolCall
from assistant.llm.template import ChatTemplate
from assistant.sessions.recall_index import MemoryIndexes
from tests.fakes.scripted import ScriptedBackend

SYSTEM = "You are a test assistant."


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    import json

    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}


def _chat() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Fix the port in src/app.ts."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("edit_file", "c1", path="src/app.ts", old="8080", new="9090")]},
        {"role": "tool", "tool_call_id": "c1", "name": "edit_file",
         "content": "Edited src/app.ts"},
        {"role": "assistant", "content": "Done: the port is 9090 now."},
        {"role": "user", "content": "Which port does app.ts use now?"},
        {"role": "assistant", "content": "It is 9090."},
        {"role": "user", "content": "Read src/db.ts and tell me the pool size."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("read_file", "c2", path="src/db.ts")]},
        {"role": "tool", "tool_call_id": "c2", "name": "read_file", "content": "pool = 12"},
    ]


def test_earlier_calls_become_notes_and_the_latest_turn_stays_literal() -> None:
    msgs = _chat()
    out = render_history(msgs)
    rendered = ChatTemplate(None).render(out)
    # The earlier edit: a note naming the tool and its short arguments, and its output.
    assert out[2] == {"role": "assistant",
                      "content": "[I ran edit_file path=src/app.ts old=8080 new=9090]"}
    assert out[3] == {"role": "user",
                      "content": "[Output of edit_file path=src/app.ts old=8080 new=9090]\n"
                                 "Edited src/app.ts"}
    assert '"name": "edit_file"' not in rendered
    # The latest turn (after the latest user message) is exactly as it was.
    assert out[-2:] == msgs[-2:]
    assert '"name": "read_file"' in rendered
    # Without recall's excerpts the earlier question and its answer stay.
    assert {"role": "assistant", "content": "It is 9090."} in out
    assert msgs[2]["tool_calls"]  # the input is not changed


def test_one_line_answers_to_questions_are_left_out_beside_excerpts() -> None:
    msgs = _chat()
    out = render_history(msgs, excerpts=True)
    texts = [m["content"] for m in out]
    assert "It is 9090." not in texts
    assert "Which port does app.ts use now?" not in texts
    # An answer to an instruction, and a long answer, stay.
    assert "Done: the port is 9090 now." in texts
    assert len(out) == len(msgs) - 2


def test_a_pasted_note_ending_in_a_question_is_never_left_out() -> None:
    """A message that carries what the user pasted (a note, then "which host ...?") is
    content, not a short question: it stays beside excerpts, and so does its answer (a chat
    of such notes would otherwise lose every one of them, from the prompt and from the
    in-context summary that extends it)."""
    note = "Note 3 about the cache:\n- item 3.1: step 1 takes 9 ms on web-2.\nWhich host?"
    long_line = "We agreed to ship on Friday and keep the old API for a month, " * 4 + "ok?"
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": note},
        {"role": "assistant", "content": "Host web-2."},
        {"role": "user", "content": long_line},
        {"role": "assistant", "content": "Yes."},
        {"role": "user", "content": "Which step is slowest?"},
    ]
    assert render_history(msgs, excerpts=True) == msgs


def test_a_long_argument_is_left_out_of_the_note_and_the_summary_is_never_touched() -> None:
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "[Context summary] What did we decide?"},
        {"role": "assistant", "content": "Tabs."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("write_file", "c1", path="a.txt", content="x" * 500)]},
        {"role": "tool", "tool_call_id": "c1", "name": "write_file", "content": "ok"},
        {"role": "user", "content": "And now?"},
    ]
    out = render_history(msgs, first=2, excerpts=True)
    assert out[1:3] == msgs[1:3]  # the summary is before ``first``: never dropped
    assert out[3]["content"] == "[I ran write_file path=a.txt]"


def test_a_hostile_call_is_noted_by_its_name() -> None:
    deep = '{"path": "a.txt", "content": ' + "[" * 5_000 + "]" * 5_000 + "}"
    assert call_note("write_file", deep) == "write_file"
    assert call_note("write_file", "not json") == "write_file"
    assert call_note("run_command", '{"command": "ls"}') == "run_command command=ls"


def _controller(render: bool = True) -> ContextController:
    backend = ScriptedBackend()
    pol = default_local().effective("local", 2_048)
    switches = CompactionSwitches(earlier_as_notes=render)
    ctrl = ContextController(backend, lambda: pol, switches=lambda: switches)
    ctrl.summarizer = ExtractiveSummarizer(ctrl.counter)
    ctrl.recall = Recall(ctrl.counter, MemoryIndexes().get)
    return ctrl


def _data_chat(ctrl: ContextController) -> Conversation:
    """W5's shape: files read, a question about each answered in one line, replayed through
    ``ctrl`` until the first files are compacted away; then a question about the first."""
    conv = Conversation()
    for part in range(1, 9):
        conv.append(Message(role="user", content=f"Read data/part_{part:02d}.txt please."))
        call = ToolCall(name="read_file", arguments={"path": f"data/part_{part:02d}.txt"})
        ctrl.prepare(CallRequest(conv, SYSTEM))
        conv.append(Message(role="assistant", tool_calls=[call], initiated_by="user"))
        lines = [f"Item {i}: code QX-{part * 1000 + i}, stored in Graz, batch {i}."
                 for i in range(1, 31)]
        conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                            content="\n".join(lines)))
        conv.append(Message(role="user", content=f"In data/part_{part:02d}.txt, what is the "
                                                  "code of item 3?"))
        ctrl.prepare(CallRequest(conv, SYSTEM))
        conv.append(Message(role="assistant", content=f"It is QX-{part * 1000 + 3}."))
    assert conv.compactions
    conv.append(Message(role="user", content="In data/part_01.txt, what is the code of item 17?"))
    return conv


def test_prepare_renders_earlier_turns_and_counts_what_is_sent() -> None:
    ctrl = _controller()
    conv = _data_chat(ctrl)
    req = ctrl.prepare(CallRequest(conv, SYSTEM))
    assert req.recall is not None  # the file line came back beside the question
    texts = [str(m["content"]) for m in req.messages]
    assert not any(m.get("tool_calls") for m in req.messages)
    assert "[At your request I ran read_file path=data/part_08.txt]" in texts
    assert not any(t.startswith("It is QX-") for t in texts)  # no answer to copy
    assert "QX-1017" in texts[-1]  # the excerpt beside the question
    assert req.prompt_tokens == ctrl.counter.exact(req.messages, None)
    # The chat itself is unchanged.
    assert any(m.tool_calls for m in conv.messages)
    assert sum(m.content.startswith("It is QX-") for m in conv.messages) == 8


def test_the_app_ships_it_on_and_switched_off_the_prompt_is_as_built() -> None:
    assert Settings().switches().earlier_as_notes
    pol = default_local().effective("local", 2_048)
    assert ContextController(ScriptedBackend(), lambda: pol).switches().earlier_as_notes
    ctrl = _controller(render=False)
    req = ctrl.prepare(CallRequest(_data_chat(ctrl), SYSTEM))
    assert any(m.get("tool_calls") for m in req.messages)
    assert any(str(m["content"]).startswith("It is QX-") for m in req.messages)


def test_the_summary_request_starts_with_the_prompt_as_sent() -> None:
    """An in-context summary extends what llama.cpp holds: the last prompt as rendered (calls
    as notes, one-line answers left out beside recall's excerpts), not as built."""
    ctrl = _controller()
    conv = _data_chat(ctrl)
    sent = ctrl.prepare(CallRequest(conv, SYSTEM)).messages
    kept = ctrl.facts.of(conv).kept
    users = [i for i, m in enumerate(kept) if m.role == "user"]
    chat = ctrl._chat_prefix(conv, SYSTEM, kept[: users[-2]])  # the compactor's span
    assert len(chat) > 3 and chat == sent[: len(chat)]
    texts = [str(m["content"]) for m in chat]
    assert any(t.startswith("[At your request I ran read_file") for t in texts)
    assert not any(m.get("tool_calls") for m in chat)
    assert not any(t.startswith("It is QX-") for t in texts)


def test_the_summary_request_keeps_the_latest_turn_as_sent() -> None:
    """The turn the last prompt ended with was sent as built (its calls literal): when the
    summary's span reaches into it, that part of the prefix stays literal too."""
    ctrl = _controller()
    conv = Conversation()
    for part in range(1, 4):
        conv.append(Message(role="user", content=f"Read data/part_{part:02d}.txt please."))
        call = ToolCall(name="read_file", arguments={"path": f"data/part_{part:02d}.txt"})
        conv.append(Message(role="assistant", tool_calls=[call]))
        conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                            content=f"Item {part}: code QX-{part}."))
    sent = ctrl.prepare(CallRequest(conv, SYSTEM)).messages
    assert sent[-2].get("tool_calls") and sent[-1]["role"] == "tool"  # the latest turn
    span = ctrl.facts.of(conv).kept
    chat = ctrl._chat_prefix(conv, SYSTEM, span)
    assert chat == sent


def test_focus_keeps_the_system_prompt_the_latest_exchange_and_the_newest_history() -> None:
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "[Context summary]\nThe user fixes ports."},
        {"role": "user", "content": "An old message " + "x " * 400},
        {"role": "assistant", "content": "An old reply."},
        {"role": "user", "content": "Which of the two files is longer?"},
        {"role": "user", "content": "[Output of run_command command=wc -l]\n12 a.ts\n30 b.ts"},
        {"role": "assistant", "content": "b.ts is longer."},
        {"role": "user", "content": "Earlier in this chat ...\n- (turn 1) x\n\nAnd the other?"},
    ]
    count = lambda m: len(str(m["content"])) // 4 + 4  # noqa: E731
    out = focus_history(msgs, first=2, tokens=0, count=count)
    # Nothing of the history fits 0 tokens, but the latest exchange stays: a follow-up
    # leans on it; the summary and the older turns are not in this call.
    assert [m["content"] for m in out] == [
        SYSTEM, "Which of the two files is longer?", "b.ts is longer.", msgs[-1]["content"]]
    # Within a budget the newest whole messages come too, in order; the old one does not fit.
    out = focus_history(msgs, first=2, tokens=60, count=count)
    assert [m["content"] for m in out] == [SYSTEM, *[m["content"] for m in msgs[3:]]]
    assert focus_history(msgs, first=2, tokens=10_000, count=count) == [msgs[0], *msgs[2:]]
    assert focus_history(msgs[:1] + msgs[-1:], first=1, tokens=0, count=count) == [
        msgs[0], msgs[-1]]


def test_recall_focus_shows_only_the_excerpts_and_the_newest_turns() -> None:
    """With ``compaction.recall_focus`` the call beside recall's excerpts holds the system
    prompt, the newest turns and the question with its excerpts; no summary, no older turns.
    Off, the prompt is the rendered history as before (the app ships it on)."""
    assert Settings().switches().recall_focus
    ctrl = _controller()
    conv = _data_chat(ctrl)
    full = ctrl.prepare(CallRequest(conv, SYSTEM))
    before = [m.model_copy() for m in conv.messages]
    ctrl.focus_tokens = lambda: FOCUS_TOKENS
    req = ctrl.prepare(CallRequest(conv, SYSTEM))
    assert req.recall is not None
    texts = [str(m["content"]) for m in req.messages]
    assert texts[0] == SYSTEM and not any("[Context summary]" in t for t in texts)
    assert any("[Context summary]" in str(m["content"]) for m in full.messages)
    assert "QX-1017" in texts[-1] and texts[-1].endswith("what is the code of item 17?")
    assert "[At your request I ran read_file path=data/part_08.txt]" in texts
    assert "Read data/part_08.txt please." in texts  # the latest exchange
    assert req.prompt_tokens < full.prompt_tokens // 2
    assert req.prompt_tokens == ctrl.counter.exact(req.messages, None)
    assert req.segments["summary"] == 0 and sum(req.segments.values()) == req.prompt_tokens
    # Only this call: the chat (and its summary) is unchanged.
    assert conv.messages == before and len(conv.compactions) == 1


def test_recall_focus_is_a_setting_and_the_benchmark_switch() -> None:
    import os

    assert not Settings().model_copy(
        update={"compaction": Settings().compaction.model_copy(update={"recall_focus": False})}
    ).switches().recall_focus
    os.environ["ASSISTANT_RECALL_FOCUS"] = "0"
    try:
        assert not Settings().switches().recall_focus
    finally:
        del os.environ["ASSISTANT_RECALL_FOCUS"]
