"""What ranks first among recall's passages (:mod:`assistant.compaction.recall_rank`)."""

from __future__ import annotations

from assistant.compaction.recall_rank import (
    Question,
    fit,
    short_target,
    speaks_of_user,
    wants_number,
)
from assistant.sessions.recall_index import Hit
from assistant.sessions.recall_text import query_terms


def _hit(text: str, source: str = "", role: str = "tool") -> Hit:
    return Hit("m", role, 1, text.count("\n") + 1, text, -1.0, source)


def test_the_line_that_answers_fits_better_than_a_line_naming_the_file() -> None:
    asked = "How many lines does bash-executor.ts have?"
    q = Question(query_terms(asked), wants_number(asked))
    listing = _hit("=== Line counts ===\n  885 src/core/agent-session.ts\n"
                   "  177 src/core/bash-executor.ts", "run_command wc -l src/core/*.ts lines")
    wrote = _hit("Successfully wrote 5370 bytes to src/core/bash-executor.ts",
                 "write_file src/core/bash-executor.ts")
    assert fit(listing, q) > fit(wrote, q)
    # A file's own header line names the file and nothing else the question asks.
    header = _hit("# part_04.txt", "read_file data/part_04.txt")
    line = _hit("Item 51: code QX-1184, stored in Oslo, batch 7.", "read_file data/part_04.txt")
    item = "In data/part_04.txt, where is item 51 stored?"
    assert fit(line, Question(query_terms(item), False)) > fit(
        header, Question(query_terms(item), False))


def test_labels_and_call_headers_shorten_long_paths_and_the_cd() -> None:
    assert short_target("cd /Users/ana/work/mono && git checkout -b refactor") == (
        "git checkout -b refactor")
    assert short_target("/Users/ana/work/mono/packages/agent/src/core/bash-executor.ts") == (
        ".../src/core/bash-executor.ts")
    assert short_target("data/part_04.txt") == "data/part_04.txt"
    message = 'git commit -m "' + "a long message " * 10 + '"'
    assert short_target(message).endswith("...") and len(short_target(message)) == 60
    assert short_target(message, None) == message  # an excerpt's header is whole


def test_what_a_question_asks_for() -> None:
    assert speaks_of_user("What name did I give the branch?")
    assert speaks_of_user("Which file did I ask you to read first?")
    assert not speaks_of_user("Which git command created the branch?")
    assert wants_number("How many lines does a.ts have?")
    assert wants_number("What percent of the records are cached?")
    assert not wants_number("Which file holds the barrel export?")
