"""A model's summary checked against the chat it summarizes (issue 46): a name, path or
number the summarized messages never name is removed, and so are phrases of our prompts."""

from __future__ import annotations

import pytest

from assistant.compaction.summary.clean import Known, clean_summary, invented
from assistant.compaction.summary.echo import cut_echoes, prompt_shingles
from assistant.compaction.summary.validate import validate_summary
from tests.fakes.scripted import ScriptedBackend

COUNT = ScriptedBackend().count

CHAT = (
    "[User]: Read CLAUDE.md and make the themes use rgb values, no rgb indices. "
    "Keep the Book model with optional progress.\n"
    "[Tool call]: read_file(path=\"src/theme/palette.ts\")\n"
    "[Tool result]: export const palette = { accent: 33, muted: 245 };\n"
    "[Assistant]: palette.ts maps 2 colours to indices."
)


@pytest.mark.parametrize(("bullet", "made_up"), [
    ("Read CLAUDE.md (C++) before editing the themes", "C++"),
    ("no more than 10 lines of code needed in palette.ts", "10"),
    ("Store progress for the Book model in Postgres", "Postgres"),
    ("The palette lives in src/theme/colors.ts", "src/theme/colors.ts"),
])
def test_a_name_path_or_number_the_chat_never_names_is_invented(bullet: str, made_up: str) -> None:
    assert made_up in invented(bullet, Known(CHAT))


@pytest.mark.parametrize("bullet", [
    "Read CLAUDE.md before editing the themes",
    "The palette maps 2 colours: accent 33 and muted 245",
    "Keep the Book model; themes use rgb values",
    "Themes in src/theme/palette.ts use rgb values",
])
def test_what_the_chat_names_is_not_invented(bullet: str) -> None:
    assert invented(bullet, Known(CHAT)) == []


def test_invented_and_echoed_text_never_reaches_an_accepted_summary() -> None:
    reply = (
        "## Goal\n- Make the themes in src/theme/palette.ts use rgb values\n"
        "## Constraints & Preferences\n- No rgb indices; keep the Book model\n"
        "- Write no more than 5 sentences in your own words\n"
        "## Progress\n### Done\n- Read CLAUDE.md (C++) and palette.ts\n"
        "- Read src/theme/palette.ts, in your own words, naming the files\n"
        "### In Progress\n- Replacing the indices 33 and 245 with rgb values\n"
        "### Blocked\n- none\n"
        "## Key Decisions\n- Book keeps optional progress\n"
        "## Next Steps\n1. Convert palette.ts in no more than 10 lines of code\n"
        "## Critical Context\n- palette.ts maps 2 colours to indices"
    )
    text, notes = clean_summary(reply, Known(CHAT), CHAT)
    for gone in ("C++", "your own words", "5 sentences", "10 lines", "naming the files"):
        assert gone not in text, gone
    assert "Read src/theme/palette.ts" in text  # what was said besides the echo stays
    assert any("summary prompt" in n for n in notes)
    assert validate_summary(text, source=CHAT, budget=400, count=COUNT) == []


def test_a_phrase_the_chat_itself_holds_is_the_chats() -> None:
    chat = "[User]: summarize it in your own words, at most 40 words please"
    line = "Summarize the notes in your own words, at most 40 words"
    assert cut_echoes(line, " ".join(chat.lower().split())) == (line, [])
    assert cut_echoes(line, "[user]: summarize the notes")[1]


def test_the_prompt_phrases_are_taken_from_the_prompts_themselves() -> None:
    grams = prompt_shingles()
    assert ("in", "your", "own", "words") in grams  # GUIDED_CLOSE
    assert ("one", "or", "two", "short") in grams or ("or", "two", "short", "bullets") in grams
    # A chat's plain words are not a prompt phrase, though FORMAT says them.
    assert ("the", "user", "is", "trying") not in grams
