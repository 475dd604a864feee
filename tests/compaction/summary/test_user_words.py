"""The user's own words in the record (issue 46): corrections and confirmations rank with
instructions, a repeat never costs a fact, pasted output is one labelled excerpt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.compaction.controller import ContextController
from assistant.compaction.recall import Recall
from assistant.compaction.request import CallRequest
from assistant.compaction.summary.summarizer import ExtractiveSummarizer
from assistant.compaction.summary.user_record import shorten_messages
from assistant.compaction.summary.user_text import INSTRUCTION_KINDS, split_user_text
from assistant.config import default_local
from assistant.conversation import Conversation, Message
from assistant.sessions.recall_index import MemoryIndexes
from tests.fakes.scripted import ScriptedBackend

COUNT = ScriptedBackend().count

#: Said by users of other agents (held-out sessions) and in the issue's own words.
DECISIONS = (
    "omfg use fucking rgb values in the themes, no rgb indices!",
    "yes, use Book with optional progress",
    "go with B",
    "the second one",
    "not tabs, spaces",
    "no rgb indices!",
    "don't touch the tests",
    "Use pnpm, not npm.",
    "yes, go ahead and delete the old importer",
    "option 2 please",
    "wtf, stop rewriting the whole file",
    "we're using `click`` not `argparse`.",
    # Held-out BookMinder sessions (Claude Code, day 3): a dislike and a denial correct.
    "I dislike you adding all the inline documentation to pytest.ini and conftest.py.",
    "There's no BookMinder Team.",
)
#: Decisions that are not instructions, from the held-out sessions (day 10): they rank with
#: the instructions all the same.
NOT_INSTRUCTIONS = (
    "sound good, except the naming, we are specifying the username, right?",
    "Though I'm not sure about the corrupted db scenario.",
    "maybe we can postpone that until later.",
    "this seem like something we can run in paralel withc cheap agents",
)
CHATTER = (
    "Tell me about the history of tea.",
    "ok, tell me about tea",
    "That sounds lovely.",
    "open the file and read it to me",
    "add a section about costs",
    "I was reading about volcanoes last weekend and found it fascinating.",
    "OK.",
    "That was OK.",
    "There's no rush.",
)
#: What the held-out users said around their instructions, classed as rules before (by
#: "should", "I need", "only", "don't" in a clause that directs nothing): not rules.
NOT_RULES = (
    "Think superhard about how we should work better together.",
    "I have limited experience with modern python coding practices, so I need you to teach "
    "me what's best now.",
    "But generally I am very unhappy with the ammount of progress we have made (only set up "
    "the project and initial function), but we have produced inordinate ammount of "
    "boliterplate farounf or micro project.",
    "We don't know whether katka opened Apple Books or of the sdditional structure was created "
    "because she signed into her Apple Account!",
    "PLease use ultrathink to plan your revisons and teach me all I need to know, to get better!",
    "let's realize our plan",
)

LS_LA = """total 544
drwxr-xr-x  2 root root   4096 Dec  7 17:44 .
drwxr-xr-x  3 root root   4096 Dec  7 17:44 ..
-rw-r--r--  1 root root   1674 Dec  7 17:44 README.md
""" + "\n".join(
    f"-rw-r--r--  1 root root {1000 + 37 * i:>6} Dec  7 17:{i:02d} module_{i}.py"
    for i in range(28)
) + "\n-rw-r--r--  1 root root 526721 Dec  7 17:44 pi_refactor_session.jsonl"


def _piece(text: str) -> tuple[str, bool]:
    (piece,) = split_user_text(text)
    return piece.kind, piece.salient


@pytest.mark.parametrize("sentence", DECISIONS)
def test_corrections_and_confirmations_rank_with_instructions(sentence: str) -> None:
    kind, salient = _piece(sentence)
    assert kind in INSTRUCTION_KINDS
    assert salient or kind == "rule"


@pytest.mark.parametrize("sentence", CHATTER)
def test_chatter_stays_chatter(sentence: str) -> None:
    kind, salient = _piece(sentence)
    assert not salient and kind != "rule"


@pytest.mark.parametrize("sentence", NOT_INSTRUCTIONS)
def test_a_hedge_a_proposal_and_a_right_question_are_decisions(sentence: str) -> None:
    (piece,) = split_user_text(sentence)
    assert piece.salient and piece.decision


@pytest.mark.parametrize("sentence", NOT_RULES)
def test_words_that_only_report_a_directive_make_no_rule(sentence: str) -> None:
    (piece,) = split_user_text(sentence)
    assert piece.kind != "rule"


def test_rules_stay_rules() -> None:
    for rule in ("Then in the future, push back when I steer you in a wrong way, always "
                 "explaining what's the purpose.",
                 "It feels like we should have a doc folder, to keep stuff like this on hand.",
                 "Also, I do not need to maintain any backwards comparibility, so we should "
                 "fully modernize out project structure.",
                 "Don't touch the tests (they pass).", "Please always answer in French."):
        assert [p.kind for p in split_user_text(rule)] == ["rule"], rule


def _chatter(n: int) -> list[str]:
    return [f"I was reading about topic {t} last weekend. It was lovely, what do you think?"
            for t in "abcdefghijklmnopqrstuvwxyz"[:n]]


def test_an_old_correction_and_a_yes_reply_outlive_newer_chatter() -> None:
    """Issue 46: "[messages 21-22 omitted]" replaced the profane correction, and the short
    yes-reply was dropped as a non-salient request while newer chatter stayed."""
    correction = "omfg use fucking rgb values in the themes, no rgb indices!"
    pick = "yes, use Book with optional progress"
    asks = [f"Show me the notes on topic {t} again." for t in "pqrstu"]
    msgs = [correction, *_chatter(6), pick, *asks, *_chatter(4)]
    full = COUNT(shorten_messages(msgs, 10_000, COUNT))
    text = shorten_messages(msgs, full // 3, COUNT)
    assert COUNT(text) <= full // 3
    assert correction in text and pick in text
    assert not any(c in text for c in _chatter(4))  # newer chatter went first
    assert sum(a in text for a in asks) < len(asks)  # and newer requests that decide nothing


def test_a_repeated_instruction_keeps_its_newest_copy_and_outranks_single_ones() -> None:
    """Issue 46: the repeat was removed as a duplicate, then the first copy dropped in the
    oldest-first stage. Now the newest copy stays, ahead of instructions said once."""
    repeated = "Always run the linter before every commit."
    once = [f"Always prefix the names of module {i} with m{i}." for i in range(14)]
    msgs = [repeated, *once[:7], "Only touch files under src/ please.", *once[7:], repeated]
    budget = 70
    text = shorten_messages(msgs, budget, COUNT)
    assert COUNT(text) <= budget
    assert text.count(repeated) == 1
    assert f"- [{len(msgs)}] {repeated}" in text  # the newest copy, under its own number
    assert "module 0 " not in text and "module 13 " in text  # older ones said once went first
    # Said once at the same place, it is dropped at this budget: the repeat is what kept it.
    alone = shorten_messages([*msgs[:-1], "Tell me more about it."], budget, COUNT)
    assert repeated not in alone


def test_a_fact_said_twice_outlives_newer_facts_said_once() -> None:
    said_twice = "We deploy the staging build on Fridays at 4 pm."
    facts = [f"The server for team {i} runs on port {8000 + i}." for i in range(12)]
    msgs = [said_twice, *facts, said_twice]
    budget = COUNT(shorten_messages(msgs, 10_000, COUNT)) // 2
    text = shorten_messages(msgs, budget, COUNT)
    assert text.count(said_twice) == 1 and "team 0 " not in text
    once = shorten_messages([said_twice, *facts, "ok"], budget, COUNT)
    assert said_twice not in once


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_a_pasted_listing_is_one_labelled_excerpt_wherever_it_comes(where: str) -> None:
    words = {"start": ("", "\nwhy is the jsonl so big?"),
             "middle": ("here is the folder:\n", "\nwhy is the jsonl so big?"),
             "end": ("here is the folder, why is the jsonl so big?\n", "")}[where]
    message = words[0] + LS_LA + words[1]
    pieces = split_user_text(message)
    pasted = [p for p in pieces if p.kind == "pasted"]
    assert len(pasted) == 1 and pasted[0].shape == "listing"
    assert pasted[0].lines == 33
    assert not any(p.salient for p in pieces if p.kind != "pasted")  # no "salient" rows
    shown = shorten_messages([message], 10_000, COUNT)
    assert "[pasted listing, 33 lines; excerpt:]" in shown
    assert "module_14.py" not in shown and "pi_refactor_session.jsonl" in shown
    assert "jsonl so big?" in shown


SHAPES = {
    "log": "2026-12-07 17:44:01 INFO server started\n2026-12-07 17:44:02 WARN slow disk\n"
           "2026-12-07 17:44:03 ERROR cannot bind port 8080",
    "table": "Filesystem      Size  Used Avail Use% Mounted on\n"
             "/dev/sda1        50G   20G   28G  42% /\n"
             "tmpfs           2.0G     0  2.0G   0% /dev/shm",
    "stack trace": 'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n'
                   "    main()\nValueError: bad value",
    "diff": "diff --git a/app.py b/app.py\nindex 83db48f..bf269f4 100644\n--- a/app.py\n"
            "+++ b/app.py\n@@ -1,3 +1,3 @@\n-x = 1\n+x = 2\n y = 3",
    "JSON": '{\n  "name": "offline",\n  "port": 8080,\n  "debug": true\n}',
    "listing": "-rw-r--r--  1 me staff  120 Dec  7 10:00 a.txt\n"
               "drwxr-xr-x  4 me staff  128 Dec  7 10:01 src",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_output_is_recognised_by_its_shape(shape: str) -> None:
    message = f"I got this:\n{SHAPES[shape]}\nWhat does it mean? Do not restart the server."
    pieces = split_user_text(message)
    assert "".join(p.text + p.sep for p in pieces) == message
    pasted = [p for p in pieces if p.kind == "pasted"]
    assert [p.shape for p in pasted] == [shape]
    assert pasted[0].text == SHAPES[shape]
    assert [p.text for p in pieces if p.kind in INSTRUCTION_KINDS] == ["Do not restart the server."]


def test_a_pasted_listing_never_pushes_out_older_decisions() -> None:
    """Issue 46: a pasted ls -la split into 33 "salient statements" that, being newest,
    pushed out a tool choice, a "..., right?" and a hedge said before it."""
    decisions = [
        "let's go with rsync for the backups",
        "we are specifying the username, right?",
        "not sure about the restore scenario, maybe we can postpone that",
    ]
    msgs = [*decisions, *_chatter(3), "here is the folder:\n" + LS_LA + "\nwhy is it so big?"]
    full = COUNT(shorten_messages(msgs, 10_000, COUNT))
    text = shorten_messages(msgs, full - 20, COUNT)
    assert all(d in text for d in decisions)
    assert "[pasted 33 lines omitted]" in text  # the listing went first
    assert "why is it so big?" in text


def test_recall_still_finds_a_line_of_a_pasted_listing_after_compaction() -> None:
    backend = ScriptedBackend()
    pol = default_local().effective("local", 2_048)
    ctrl = ContextController(backend, lambda: pol)
    ctrl.summarizer = ExtractiveSummarizer(ctrl.counter)
    indexes = MemoryIndexes()
    ctrl.recall = Recall(ctrl.counter, indexes.get)
    conv = Conversation()
    conv.append(Message(role="user", content="here is the folder:\n" + LS_LA))
    conv.append(Message(role="assistant", content="Noted."))
    for i in range(30):
        conv.append(Message(role="user", content=f"Tell me about the history of tea {i}. " * 8))
        conv.append(Message(role="assistant", content="Tea was first grown in China. " * 15))
        ctrl.prepare(CallRequest(conv, "sys"))
    assert conv.compactions
    summary = conv.compactions[-1].summary
    assert "module_14.py" not in summary  # the excerpt shows the head and the last line
    conv.append(Message(role="user", content="How big was module_14.py?"))
    req = ctrl.prepare(CallRequest(conv, "sys"))
    assert req.recall is not None
    assert "1518 Dec  7 17:14 module_14.py" in req.messages[-1]["content"]


def test_a_shell_session_pasted_in_a_fence_closed_mid_line_keeps_the_words_after_it() -> None:
    """Held-out BookMinder session, day 10: a zsh session pasted in a fence that closes in
    the middle of the last line, then the user's own sentence on that line."""
    message = (
        "```bash me@MacBook-Air /Users % sudo ls -la /Users/katka/Library/Books/ 2>/dev/null\n"
        "total 8\n"
        "drwx------@ 3 katka  staff   96 Oct  7  2024 .\n"
        "drwx------@ 6 katka  staff  192 Oct 31  2020 ..\n"
        "-rw-r--r--@ 1 katka  staff  121 Oct  7  2024 Books.plist ``` When I opened Apple "
        "Books, the app started, but I am not signed into cloud account."
    )
    pieces = split_user_text(message)
    assert pieces[0].kind == "pasted" and pieces[0].shape == "listing"
    words = [p.text for p in pieces if p.kind != "pasted"]
    assert any("I am not signed into cloud account." in w for w in words)
    prompt = "me@MacBook-Air /Users % sudo ls -la /Users/new_mac_user/Library/ | grep Containers"
    assert [p.kind for p in split_user_text(prompt + "\n" + SHAPES["listing"])] == ["pasted"]


def test_the_output_between_shell_prompts_is_pasted_and_the_words_after_it_are_not() -> None:
    """Held-out BookMinder session, day 10: "No Books.plist" and "zsh: no matches found"
    between two prompts were kept as the user's statements (each naming a path: a fact)."""
    message = (
        "me@MacBook-Air /Users % sudo ls -la /Users/new/Books.plist 2>/dev/null || echo "
        '"No Books.plist"\nPassword:\nNo Books.plist\n'
        "me@MacBook-Air /Users % ls /Users/new/BKLibrary-*.sqlite\n"
        "zsh: no matches found: /Users/new/BKLibrary-*.sqlite\n"
        "\nSo the library is only created when the app is opened for the first time."
    )
    pieces = split_user_text(message)
    assert "".join(p.text + p.sep for p in pieces) == message
    assert [p.kind == "pasted" for p in pieces] == [True, False]
    assert pieces[0].shape == "log" and pieces[0].lines == 5


# -- the held-out users' own words (tests/data/real-sessions, BookMinder day 10) -------------
DAY10 = Path(__file__).resolve().parents[2] / "data" / "real-sessions" / (
    "bookminder_claude_day010.jsonl")


def _day10() -> list[str]:
    """The user messages of the held-out Claude Code session of day 10, in order."""
    lines = [json.loads(line) for line in DAY10.read_text(encoding="utf-8").splitlines()]
    return [m["content"] for m in lines if m["role"] == "user"]


def test_a_message_sent_twice_keeps_its_facts_ahead_of_messages_said_once() -> None:
    """The user sent "let's discuss this some more. I find 3 possible options ..." twice.
    Its facts keep their newest copy and outlive older words said once; its requests
    ("Let's Ultrathink!") asked for something then and go like any request."""
    users = _day10()
    assert users[1] == users[2]
    options = ("I find 3 possible options worthy of further exploration: env-var, --db-path "
               "and dependency injection refactoring.")
    twice = [users[1], users[2], *users[3:12]]
    text = shorten_messages(twice, 300, COUNT)
    assert COUNT(text) <= 300
    assert text.count(options) == 1
    assert text.startswith(f"- [message 1 omitted]\n- [2] [...] {options}")  # the newest copy
    assert "let's discuss this some more." not in text and "Let's Ultrathink!" not in text
    once = shorten_messages([users[1], *users[3:12]], 300, COUNT)
    assert options not in once  # said once, the oldest message's fact goes first


def test_a_pasted_ls_la_listing_never_pushes_out_the_older_decisions_in_the_users_words() -> None:
    """Day 10: the pasted `ls -la` of /Users/new_mac_user was split into "salient
    statements" (each line with a number) that, being newest, pushed out the click-not-
    argparse correction, "we are specifying the username, right?" and the postponed
    corrupted-db scenario."""
    users = _day10()
    listing = users[11]
    assert [(p.kind, p.shape, p.lines) for p in split_user_text(listing)] == [
        ("pasted", "listing", 32)]
    msgs = [users[3], users[4], users[5], listing]
    full = COUNT(shorten_messages(msgs, 10_000, COUNT))
    for budget in (full - 20, full // 2):
        text = shorten_messages(msgs, budget, COUNT)
        assert COUNT(text) <= budget
        for decision in ("we're using `click`` not `argparse`.",
                         "sound good, except the naming, we are specifying the username, right?",
                         "Though I'm not sure about the corrupted db scenario.",
                         "maybe we can postpone that until later."):
            assert decision in text, (budget, decision)
        assert "new_mac_user  staff" not in text  # no row of the listing


def test_a_fence_opened_after_the_users_words_is_pasted_from_there() -> None:
    """Day 10: "I'm here: ```bash Last login: ..." and "... skipped setup of Apple Account.
    ```bash me@host /Users % sudo ls ... || echo "No Books.plist"" opened a fence after the
    user's words: the shell session from the fence on is pasted ("Password:" and "No
    Books.plist" were the user's "statements", the latter even a correction)."""
    users = _day10()
    for message, words in ((users[5], "I'm here:"), (users[9], (
            "I have now logged into the new_mac_user account but skipped setup of Apple "
            "Account."))):
        pieces = split_user_text(message)
        assert "".join(p.text + p.sep for p in pieces) == message
        assert pieces[-1].kind == "pasted" and pieces[-1].text.startswith("```bash")
        assert pieces[-2].text == words
        assert not any("Books.plist" in p.text or "Password" in p.text
                       for p in pieces if p.kind != "pasted")


def test_a_request_said_again_is_raised_to_the_decisions() -> None:
    """Day 10's "let's realize our plan" said once goes before the facts of its message
    (it asked for something then); said again, it outranks them (a repeat raises the rank)."""
    plan = "let's realize our plan"
    fact = "I have now logged into the new_mac_user account but skipped setup of Apple Account."
    older = [f"The server for team {i} runs on port {8000 + i}." for i in range(4)]
    twice = shorten_messages([f"{plan}.", *older, f"{plan}. {fact}"], 35, COUNT)
    assert plan in twice and fact not in twice
    once = shorten_messages(["ok", *older, f"{plan}. {fact}"], 35, COUNT)
    assert plan not in once and fact in once
