"""The model sees what it is asked about: unanswered outputs are never cleared, a cut output
keeps its head and tail, a cleared one says what it was."""

from __future__ import annotations

from assistant.compaction.prune import plan_prune
from assistant.compaction.request import CallRequest
from assistant.compaction.tokens import TokenCounter
from assistant.compaction.visibility import (
    cap_ladder,
    cleared_note,
    line_range,
    pending_start,
    plan_trims,
    trim_output,
    unanswered_ids,
)
from assistant.config import CompactionSwitches
from assistant.conversation import Conversation, Message, ToolCall
from tests.fakes.scripted import ScriptedBackend

from .helpers import GOOD_SUMMARY, SYSTEM, controller, local_policy, shown_outputs, tool_turn

COUNT = ScriptedBackend().count


def _numbered_file(path: str, lines: int) -> str:
    body = "\n".join(f"{n}: value_{n} = compute({n}, scale={n * 3})" for n in range(1, lines + 1))
    return f"{path} ({lines:,} lines)\n{body}"


def _user_read(conv: Conversation, path: str, content: str) -> Message:
    """``/read path``: a user-started call and its result (no model call)."""
    call = ToolCall(name="read_file", arguments={"path": path})
    conv.append(Message(role="assistant", tool_calls=[call], initiated_by="user"))
    return conv.append(
        Message(role="tool", tool_call_id=call.id, name="read_file", content=content,
                initiated_by="user")
    )


# -- pending / answered ---------------------------------------------------------------------
def test_pending_starts_after_the_last_final_reply() -> None:
    conv = Conversation()
    tool_turn(conv, 0)  # ends with a final answer
    res = _user_read(conv, "a.txt", "x")
    conv.append(Message(role="user", content="what is in a.txt?"))
    assert pending_start(conv.messages) == 4
    assert unanswered_ids(conv.messages) == {res.id}
    conv.append(Message(role="assistant", content="It says x.", stopped=True))
    assert unanswered_ids(conv.messages) == {res.id}  # a stopped reply is no answer
    conv.append(Message(role="assistant", content="It says x."))
    assert unanswered_ids(conv.messages) == frozenset()


def test_an_unanswered_read_just_over_protect_is_never_pruned() -> None:
    conv = Conversation()
    for i in range(2):
        tool_turn(conv, i, size=60)
    counter = TokenCounter(ScriptedBackend())
    read = _user_read(conv, "notes.txt", _numbered_file("notes.txt", 60))
    conv.append(Message(role="user", content="What is on line 7 of notes.txt?"))
    protect = counter.message(read) - 1  # the read alone is just over protect
    plan = plan_prune(conv.messages, counter, protect=protect, minimum=1)
    assert read.id not in plan.message_ids
    assert plan.applies  # the answered older outputs are still pruned
    conv.append(Message(role="assistant", content="Line 7 is value_7."))
    conv.append(Message(role="user", content="thanks"))
    plan = plan_prune(conv.messages, counter, protect=protect, minimum=1)
    assert read.id in plan.message_ids  # answered: the old rule applies again


def test_two_reads_of_one_turn_whose_sum_exceeds_protect_are_both_kept() -> None:
    conv = Conversation()
    tool_turn(conv, 0, size=40)
    conv.append(Message(role="user", content="Compare a.py and b.py."))
    results = []
    for path in ("a.py", "b.py"):
        call = ToolCall(name="read_file", arguments={"path": path})
        conv.append(Message(role="assistant", tool_calls=[call]))
        results.append(conv.append(Message(role="tool", tool_call_id=call.id, name="read_file",
                                           content=_numbered_file(path, 50))))
    counter = TokenCounter(ScriptedBackend())
    plan = plan_prune(conv.messages, counter, protect=counter.message(results[1]), minimum=1)
    assert not {r.id for r in results} & set(plan.message_ids)


def test_the_question_call_holds_the_file_the_user_read() -> None:
    """What the user experiences: /read, then a question; the prompt holds the file (the
    older answered output may be cleared)."""
    conv = Conversation()
    tool_turn(conv, 0, size=20)
    body = _numbered_file("notes.txt", 200)
    _user_read(conv, "notes.txt", body)
    conv.append(Message(role="user", content="What is on line 7 of notes.txt?"))
    pol = local_policy(protect=500, minimum=100)
    ctl, _, _ = controller(ScriptedBackend(), pol)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert body in shown_outputs(req.messages)
    assert not req.trimmed and req.compaction is None


# -- cleared notes ------------------------------------------------------------------------
def test_cleared_note_names_tool_path_lines_and_size() -> None:
    call = ToolCall(name="read_file", arguments={"path": "src/x.py"})
    msg = Message(role="tool", tool_call_id=call.id, name="read_file",
                  content=_numbered_file("src/x.py", 390))
    note = cleared_note(msg, call, 2675)
    assert note == ("[Old tool result content cleared: read_file src/x.py lines 1-390, 2,675 "
                    "tokens; read it again if you need it]")
    cmd = ToolCall(name="run_command", arguments={"command": "make test"})
    out = Message(role="tool", tool_call_id=cmd.id, name="run_command", content="a\nb\nc")
    assert cleared_note(out, cmd, 9) == (
        "[Old tool result content cleared: run_command 'make test', 3 lines of output, 9 "
        "tokens; "
        "run it again if you need it]"
    )


def test_line_range_of_partial_and_truncated_reads() -> None:
    call = ToolCall(name="read_file", arguments={"path": "a.py", "start_line": 50})
    assert line_range("a.py (lines 50-80 of 900)\nx", call) == (50, 80)
    cut = "a.py (lines 1-40 of 900)\nx\n[Truncated: showing lines 1-40 of 900. To read more]"
    assert line_range(cut, ToolCall(name="read_file", arguments={"path": "a.py"})) == (1, 40)
    other = ToolCall(name="Read", arguments={"file_path": "b.ts", "offset": 10})
    assert line_range("l1\nl2\nl3", other) == (10, 12)


def test_the_model_sees_the_note_for_a_pruned_output() -> None:
    conv = Conversation()
    results = [tool_turn(conv, i, size=80)[2] for i in range(3)]
    conv.append(Message(role="user", content="next"))
    ctl, _, _ = controller(policy=local_policy(protect=0, minimum=1))
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    shown = shown_outputs(req.messages)
    assert all(r.pruned for r in results)
    assert shown[0].startswith("[Old tool result content cleared: read_file src/file_0.py ")
    assert shown[0].endswith("tokens; read it again if you need it]")
    assert results[0].content.startswith("line 0")  # the original is kept


# -- cutting to fit -----------------------------------------------------------------------
def test_trim_keeps_head_and_tail_and_names_the_omitted_file_lines() -> None:
    call = ToolCall(name="read_file", arguments={"path": "big.py"})
    text = _numbered_file("big.py", 400)
    cut = trim_output(text, 300, COUNT, call)
    assert COUNT(cut) <= 300
    lines = cut.split("\n")
    assert lines[0] == "big.py (400 lines)" and lines[1].startswith("1: value_1 ")
    assert lines[-1].startswith("400: value_400 ")
    marker = next(line for line in lines if line.startswith("[... "))
    first = int(lines[lines.index(marker) - 1].split(":")[0]) + 1
    last = int(lines[lines.index(marker) + 1].split(":")[0]) - 1
    assert f"(file lines {first}-{last}, " in marker
    assert f"call read_file path=big.py start_line={first} end_line={last}" in marker


def test_trim_by_characters_for_one_long_line_and_never_grows() -> None:
    text = "x" * 20_000
    cut = trim_output(text, 200, COUNT)
    assert COUNT(cut) <= 200 and cut.startswith("xxx") and cut.endswith("xxx")
    assert "characters omitted here to fit the context window" in cut
    assert trim_output("tiny", 1, COUNT) == "tiny"  # the marker alone would be larger


def test_trim_caps_come_from_a_stable_ladder() -> None:
    msgs = [Message(role="tool", tool_call_id=f"c{i}", content="x") for i in range(3)]
    outputs = [(msgs[0], 3000, 2990), (msgs[1], 200, 190), (msgs[2], 1500, 1490)]
    plan = plan_trims(outputs, 1000)
    assert set(plan.caps) == {msgs[0].id}  # the small ones stay whole
    assert plan.cap in cap_ladder(3000)
    again = plan_trims(outputs, 900)
    assert again.cap == plan.cap  # a little less pressure: the same cut, same tokens
    more = plan_trims(outputs, 3500)
    assert set(more.caps) == {msgs[0].id, msgs[2].id} and more.cap < plan.cap


def test_an_output_larger_than_the_window_is_cut_to_fit_not_cleared() -> None:
    conv = Conversation()
    tool_turn(conv, 0, size=10)
    body = _numbered_file("logs/build.log", 2_500)  # ~30k tokens in a 10k window
    _user_read(conv, "logs/build.log", body)
    conv.append(Message(role="user", content="Which step took the longest?"))
    pol = local_policy()
    ctl, _, events = controller(ScriptedBackend([GOOD_SUMMARY]), pol)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.prompt_tokens + pol.reserve <= pol.window
    contents = [m["content"] for m in req.messages]
    assert "[At your request I ran read_file path=logs/build.log]" in contents
    shown = next(o for o in shown_outputs(req.messages) if o.startswith("logs/build.log"))
    assert shown.startswith("logs/build.log (2,500 lines)\n1: value_1")
    assert shown.rstrip().endswith("compute(2500, scale=7500)")
    assert "call read_file path=logs/build.log start_line=" in shown
    assert req.messages[-1]["content"] == "Which step took the longest?"
    assert any(type(e).__name__ == "TrimEvent" for e in events)
    # The same state gives the same prompt (the KV cache keeps its prefix).
    assert ctl.prepare(CallRequest(conv, SYSTEM)).messages == req.messages


# -- compaction keeps pending outputs and fills the window --------------------------------
def test_compaction_never_summarizes_a_read_the_user_is_asking_about() -> None:
    conv = Conversation()
    for i in range(12):
        tool_turn(conv, i, size=45)
    body = _numbered_file("notes.txt", 120)
    read = _user_read(conv, "notes.txt", body)
    conv.append(Message(role="user", content="What is on line 7 of notes.txt?"))
    pol = local_policy(window=4_000, protect=3_000, minimum=10_000, reserve=400,
                       keep_recent=600, summary_budget=300)
    ctl, _, _ = controller(ScriptedBackend([GOOD_SUMMARY] * 3), pol)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.compaction is not None
    assert body in shown_outputs(req.messages)
    assert req.compaction.first_kept_id is not None
    kept_ids = [m.id for m in conv.kept_messages()]
    assert read.id in kept_ids


def test_no_compaction_leaves_more_than_half_the_window_empty() -> None:
    conv = Conversation()
    pol = local_policy()
    no_prune = CompactionSwitches(prune=False)
    ctl, _, _ = controller(ScriptedBackend([GOOD_SUMMARY] * 20), pol, switches=lambda: no_prune)
    afters = []
    for i in range(40):
        tool_turn(conv, i, size=40)
        conv.append(Message(role="user", content=f"Follow-up {i}: what changed in file {i}?"))
        req = ctl.prepare(CallRequest(conv, SYSTEM))
        if req.compaction is not None:
            afters.append(req.compaction.tokens_after)
        conv.append(Message(role="assistant", content=f"Reply {i}."))
    assert afters, "the chat never compacted"
    assert all(a >= pol.window // 2 for a in afters), afters


def test_a_question_left_without_reply_gives_way_to_the_latest_turns_reads() -> None:
    # Turn A's question got no final reply (the model returned nothing), so its read is
    # still "pending"; then the user reads two more files and asks about them. When both
    # turns cannot fit, turn A is summarized: the files of the question asked now stay.
    conv = Conversation()
    tool_turn(conv, 0)
    for k in range(12):
        _user_read(conv, f"old/a{k}.txt", _numbered_file(f"old/a{k}.txt", 30))
    conv.append(Message(role="user", content="What do the old/a*.txt files have in common?"))
    b_body = _numbered_file("src/b.py", 60)
    c_body = _numbered_file("src/c.py", 40)
    b = _user_read(conv, "src/b.py", b_body)
    c = _user_read(conv, "src/c.py", c_body)
    conv.append(Message(role="user", content="Is there a bug in src/c.py?"))
    pol = local_policy(window=4_000, protect=10_000, minimum=10_000, reserve=400,
                       keep_recent=600, summary_budget=300)
    assert COUNT(b_body) + COUNT(c_body) < pol.window // 2
    ctl, _, _ = controller(ScriptedBackend([GOOD_SUMMARY] * 3), pol)
    req = ctl.prepare(CallRequest(conv, SYSTEM))
    assert req.prompt_tokens + pol.reserve <= pol.window
    assert req.compaction is not None
    contents = [m["content"] for m in req.messages]
    assert b_body in shown_outputs(req.messages) and c_body in shown_outputs(req.messages)
    assert not any(text.startswith("old/a0.txt") for text in contents)  # turn A: summarized
    assert {b.id, c.id} <= {m.id for m in conv.kept_messages()}
    assert contents[-1] == "Is there a bug in src/c.py?"


def test_a_users_message_is_cut_with_a_note_that_it_is_kept_whole() -> None:
    """Issue 28 item 6: the user's message the model has not answered is cut like an
    output, and its marker says the chat keeps it (there is no file to read it from)."""
    from assistant.compaction.visibility import pending_user_ids, trim_output

    counter = TokenCounter(ScriptedBackend())
    text = "".join(f"log line {i}: something happened\n" for i in range(3_000))
    cut = trim_output(text, 300, counter.text, kind="message")
    assert counter.text(cut) <= 300
    assert cut.startswith("log line 0:") and "log line 2999:" in cut
    assert "lines omitted here to fit the context window (message lines" in cut
    assert "the whole message is kept in the chat" in cut
    answered = Message(role="user", content="old question")
    reply = Message(role="assistant", content="old answer")
    waiting = Message(role="user", content=text)
    assert pending_user_ids([answered, reply, waiting]) == frozenset({waiting.id})
