"""What the user said survives: classification, the task statement, shortening order."""

from __future__ import annotations

import pytest

from assistant.compaction.file_tracking import FileOps
from assistant.compaction.summary import user_record
from assistant.compaction.summary.extractive import collect_state, extractive_summary
from assistant.compaction.summary.user_record import render_user_record, shorten_messages
from assistant.compaction.summary.user_text import instructions, split_user_text, task_statement
from assistant.conversation import Message
from tests.fakes.scripted import ScriptedBackend

COUNT = ScriptedBackend().count


def _kinds(text: str) -> list[tuple[str, str]]:
    return [(p.kind, p.text.strip()) for p in split_user_text(text)]


def test_pieces_join_back_to_the_message() -> None:
    text = "Hi.  Please fix it!\n\n```py\nx = 1\n```\nthanks e.g. now? ok"
    assert "".join(p.text + p.sep for p in split_user_text(text)) == text


def test_pasted_code_with_must_in_it_is_not_an_instruction() -> None:
    fenced = "Here:\n```python\n# you must never call this twice\ndef f():\n    pass\n```\nWhy?"
    assert instructions(fenced) == []
    bare = "# you must never call this twice\ndef f(x):\n    return x\nwhat does this do?"
    assert instructions(bare) == []
    log = "2024-05-01 10:00:01 ERROR you must restart\n2024-05-01 10:00:02 WARN always on"
    assert [k for k, _ in _kinds(log)] == ["pasted"]
    trace = ('Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n'
             "ValueError: must be positive")
    assert [k for k, _ in _kinds(trace)] == ["pasted"]
    assert _kinds("> you should never do this\nI agree with that.")[0][0] == "pasted"


def test_instructions_questions_and_requests() -> None:
    kinds = dict((t, k) for k, t in _kinds(
        "ok, create a branch refactor. will this also allow us to test the agent core? "
        "btw, can we make it so we keep the old code around for reference? "
        "i would only want e2e tests for AgentSession. it feels like a mess."
    ))
    assert kinds["ok, create a branch refactor."] == "request"
    assert kinds["will this also allow us to test the agent core?"] == "question"
    assert kinds["btw, can we make it so we keep the old code around for reference?"] == "rule"
    assert kinds["i would only want e2e tests for AgentSession."] == "rule"
    assert kinds["it feels like a mess."] == "statement"


def test_the_task_statement_is_the_first_substantive_message() -> None:
    assert task_statement(["/mode local", "ok", "Refactor the parser into stages."]) == (
        "Refactor the parser into stages."
    )
    assert task_statement(["/mode local"]) is None


def test_extractive_goal_skips_a_slash_command() -> None:
    msgs = [Message(role="user", content="/mode"), Message(role="user", content="Build a CLI.")]
    state = collect_state(msgs, FileOps(), last_request_visible=True)
    text = extractive_summary(msgs, state, previous=None, budget=200, count=COUNT)
    assert text.startswith("## Goal\nBuild a CLI.")


def test_every_message_verbatim_while_it_fits() -> None:
    msgs = ["Always use four spaces.", "Here is a log:\n```\nERROR x\n```\nWhat broke?"]
    text = shorten_messages(msgs, 500, COUNT)
    assert text == ("- [1] Always use four spaces.\n"
                    "- [2] Here is a log:\n  ```\n  ERROR x\n  ```\n  What broke?")


def test_shortening_drops_pasted_then_questions_then_statements_then_old_requests() -> None:
    msgs = [
        "Never edit vendor/ files. What is a lockfile? I had a long day.",
        "Create a branch named refactor.\n```\n" + "\n".join(f"line {i}" for i in range(40))
        + "\n```",
        "Call it main-new. Is that fine?",
    ]
    full = COUNT(shorten_messages(msgs, 10_000, COUNT))
    step1 = shorten_messages(msgs, full - 5, COUNT)  # the pasted block goes first
    assert "[pasted 42 lines omitted]" in step1 and "What is a lockfile?" in step1
    # Questions go before statements (seen with chatter allowed the whole budget; with its
    # share, both go at once in a record this small: see the next test).
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(user_record, "CHATTER_SHARE", 1.0)
        step2 = shorten_messages(msgs, COUNT(step1) - 2, COUNT)
    assert "What is a lockfile?" not in step2 and "I had a long day." in step2
    tight = shorten_messages(msgs, 40, COUNT)
    assert COUNT(tight) <= 40
    assert "Never edit vendor/ files." in tight and "Call it main-new." in tight
    tighter = shorten_messages(msgs, 28, COUNT)
    # Requests go before rules, oldest first: the branch request is dropped first.
    assert "Create a branch named refactor." not in tighter
    assert "Call it main-new." in tighter


def test_a_record_that_must_shrink_keeps_chatter_within_its_share_and_facts_beyond() -> None:
    facts = [f"The server for team {i} runs on port {8000 + i}." for i in range(6)]
    chatter = [f"I was reading about {t} last weekend, it was lovely." for t in
               ("tea", "bees", "jazz", "castles", "whales", "origami")]
    msgs = [m for pair in zip(facts, chatter, strict=True) for m in pair]
    full = shorten_messages(msgs, 10_000, COUNT)
    fits = COUNT(full)
    while shorten_messages(msgs, fits, COUNT) != full:  # bullets count a little apart
        fits += 1
    budget = fits - 1  # over by one token: chatter goes down to its share, facts all stay
    text = shorten_messages(msgs, budget, COUNT)
    assert all(f in text for f in facts)
    kept_chatter = [c for c in chatter if c in text]
    assert len(kept_chatter) < len(chatter) - 1
    assert COUNT(text) <= budget


def test_the_newest_instructions_are_never_dropped_to_keep_the_oldest() -> None:
    msgs = [f"Rule {i}: always prefix names with r{i}." for i in range(30)]
    text = shorten_messages(msgs, 120, COUNT)
    assert "Rule 29:" in text and "Rule 0:" not in text
    assert "omitted]" in text


def test_a_record_that_counts_more_when_joined_loses_statements_not_the_ground_rules() -> None:
    # Found in the full W2 run: the bullets fitted the budget one by one, the joined text
    # counted a few tokens more (the real tokenizer merges across lines), and the last step
    # dropped the oldest message whole: the chat's ground rules, with newer chatter kept.
    def joined(text: str) -> int:  # every line break costs two tokens beyond the lines
        return len(text.split()) + 2 * text.count("\n")

    rules = ("Ground rules for this whole chat: Never use tabs. Always write dates as "
             "YYYY-MM-DD. Keep every answer under 60 words.")
    chatter = [f"The cache {i} is checked every {i} minutes before we load it. "
               f"We agreed to sync batch {i} in Oslo." for i in range(12)]
    full = len(shorten_messages([rules, *chatter], 10_000, joined).split())
    for budget in range(40, full, 3):
        out = shorten_messages([rules, *chatter], budget, joined)
        assert joined(out) <= budget
        if "We agreed" in out or "is checked" in out:
            assert "Keep every answer under 60 words." in out, (budget, out)


def test_repeated_sentences_go_before_anything_else() -> None:
    msgs = ["Never use tabs.", "Tell me more. " * 30]
    text = shorten_messages(msgs, 30, COUNT)
    assert "Never use tabs." in text and text.count("Tell me more.") == 1


def test_last_request_is_kept_whole_unless_it_alone_exceeds_the_budget() -> None:
    last = "Please summarize the design doc and list its open questions. " * 3
    text = render_user_record(["older one"], 200, COUNT, last_request=last)
    assert last.strip() in text
    frames = "\n".join(f"  at frame{i} (x.js:{i})" for i in range(300))
    huge = "Fix the bug in the parser. " + frames
    text = render_user_record([], 80, COUNT, last_request=huge)
    assert COUNT(text) <= 80 and "Fix the bug in the parser." in text
    # The trace is pasted output: one short labelled excerpt, not 299 frames.
    assert "[pasted stack trace, 299 lines; excerpt:]" in text and "frame150" not in text


def test_the_record_never_exceeds_a_tiny_budget_nor_shows_fragments() -> None:
    older = ["Always use tabs. " * 3, "What is this? Create the file.", "ok"]
    last = "Please rename main.py to app.py and keep the old one around for reference."
    for budget in range(0, 80):
        text = render_user_record(older, budget, COUNT, last_request=last)
        assert COUNT(text) <= budget, budget
        for line in text.splitlines():
            assert line.startswith(("## ", "- [", "  ")) or line in last or "[..." in line, line
