"""Prompts of the summarizer and the layout of the injected summary (docs/COMPACTION.md)."""

from __future__ import annotations

from collections.abc import Sequence

REQUIRED_SECTIONS: tuple[str, ...] = (
    "Goal", "Constraints & Preferences", "Progress", "Key Decisions", "Next Steps",
    "Critical Context",
)

SUMMARY_HEADER = (
    "[Context summary] Earlier parts of this conversation were compacted. This summary "
    "replaces them; the messages after it are verbatim."
)
MECHANICAL_MARKER = "\n\n---\n[Recorded by the assistant, verbatim]\n"
#: The header at small summary budgets (a 1k-2k window cannot spend 30 tokens on it).
SUMMARY_HEADER_SHORT = "[Context summary] Earlier messages, compacted:"

SYSTEM = (
    "You write concise, factual summaries of conversations between a user and an AI "
    "assistant. You never continue the conversation and never answer its questions. "
    "You only output the summary in the requested format."
)

FORMAT = """\
## Goal
<what the user is trying to accomplish>

## Constraints & Preferences
- <each requirement or preference the user stated>

## Progress
### Done
- <completed steps, with file paths>
### In Progress
- <current work>
### Blocked
- <problems, or "none">

## Key Decisions
- <decision>: <why>

## Next Steps
1. <what should happen next>

## Critical Context
- <names, numbers, paths, errors needed to continue>"""

INITIAL = """\
The text inside <conversation> is a conversation to summarize. Do not continue it and do not \
answer it.

Write a summary that lets the assistant continue the work without the original messages. \
Use exactly this format, keeping every heading:

{format}
{focus}
Keep every file path, name and number that matters. Be brief: at most {words} words."""

UPDATE = """\
The text inside <conversation> contains NEW messages of a conversation. The text inside \
<previous-summary> summarizes what came before them. Do not continue the conversation.

Write one updated summary that merges the new messages into the previous summary:
- keep all information of the previous summary that is still true;
- add new progress, decisions and context;
- move finished items from In Progress to Done;
- update Next Steps.

Use exactly this format, keeping every heading:

{format}
{focus}
Keep every file path, name and number that matters. Be brief: at most {words} words."""

TURN_PREFIX = """\
The text inside <conversation> is the FIRST PART of one long request; its later part is kept \
verbatim elsewhere. Do not continue it.

Summarize only what the later part needs: the user's request, what was done so far and \
results that matter. Use this format, keeping every heading:

{format}
{focus}
Be brief: at most {words} words."""

STRICT = """\

IMPORTANT: your previous answer was rejected ({problems}). Output ONLY the summary. Start \
with the line "## Goal". Include every heading listed above. Do not copy the conversation; \
describe it in your own short sentences."""

#: In-context requests: appended as a user message after the chat itself (the span to
#: summarize), so llama.cpp reuses the chat tokens it already holds and evaluates only this.
IN_CONTEXT = """\
STOP. Do not answer or continue the conversation above. Your task now is different: write \
a summary of the conversation above so the assistant can continue the work without those \
messages.{update}{split}

Use exactly this format, keeping every heading:

{format}
{focus}
Keep every file path, name and number that matters. Be brief: at most {words} words. \
Start with the line "## Goal"."""

IN_CONTEXT_UPDATE = (
    " The first user message above, starting with \"[Context summary]\", summarizes what came "
    "before: merge the later messages into it, keep all of it that is still true and move "
    "finished items from In Progress to Done."
)
IN_CONTEXT_SPLIT = (
    " The last request above is still being worked on: describe it under In Progress."
)

FOCUS = "\nPay special attention to: {focus}\n"

TURN_SEPARATOR = "\n\n---\n\n**Context of the current request (earlier part):**\n\n"


def focus_line(focus: str | None) -> str:
    return FOCUS.format(focus=focus.strip()) if focus and focus.strip() else ""


def build_in_context(
    *, update: bool, split: bool, focus: str | None, words: int, problems: str | None = None
) -> str:
    """The request appended to the chat prompt for an in-context summary."""
    text = IN_CONTEXT.format(
        update=IN_CONTEXT_UPDATE if update else "",
        split=IN_CONTEXT_SPLIT if split else "",
        format=FORMAT,
        focus=focus_line(focus),
        words=max(words, 20),
    )
    return text + (STRICT.format(problems=problems) if problems else "")


def build_prompt(
    transcript: str, *, previous: str | None, kind: str, focus: str | None, words: int,
    problems: str | None = None,
) -> str:
    """The user message of one summarizer call (``kind``: initial, update or prefix)."""
    template = {"initial": INITIAL, "update": UPDATE, "prefix": TURN_PREFIX}[kind]
    parts = [f"<conversation>\n{transcript}\n</conversation>"]
    if kind == "update" and previous:
        parts.append(f"<previous-summary>\n{previous}\n</previous-summary>")
    parts.append(template.format(format=FORMAT, focus=focus_line(focus), words=max(words, 20)))
    if problems:
        parts.append(STRICT.format(problems=problems))
    return "\n\n".join(parts)


# -- guided prompts (the reply is generated under the summary grammar) ------------------------
GUIDED_IN_CONTEXT = """\
STOP. Do not answer or continue the conversation above. Summarize it for the assistant \
under the headings, one or two short bullets each.{update}{split}"""

GUIDED_TRANSCRIPT = """\
The text inside <conversation> is a conversation between a user and an AI assistant. Do not \
continue it. Summarize it for the assistant under the headings, one or two short bullets \
each.{update}{split}"""

GUIDED_UPDATE_IN_CONTEXT = (
    " The first user message above, starting with \"[Context summary]\", summarizes what "
    "came before: keep what is still true of it."
)
GUIDED_UPDATE_TRANSCRIPT = (
    " The text inside <previous-summary> summarizes what came before: keep what is still "
    "true of it."
)
GUIDED_SPLIT = " The latest request is still being worked on."

GUIDED_CLOSE = """\
Write each heading's bullets from its facts, in your own words, naming the files, names and \
numbers that matter."""

GUIDED_REPAIR_IN_CONTEXT = """\
STOP. Do not answer or continue the conversation above. Your summary of it said nothing \
specific under: {names}. Write only {these} again, one or two short bullets each."""

GUIDED_REPAIR_TRANSCRIPT = """\
The text inside <conversation> is a conversation between a user and an AI assistant. Do not \
continue it. Your summary of it said nothing specific under: {names}. Write only {these} \
again, one or two short bullets each."""

GUIDED_STRICT = """\

Your previous summary was rejected ({problems}). Write each heading from its own facts \
above."""


#: The headings a group of facts belongs under (a repair asks only for those).
FACT_HOMES: dict[str, tuple[str, ...]] = {
    "Goal": ("Goal",),
    "Constraints & Preferences": ("Constraints & Preferences",),
    "Done": ("Done", "In Progress"),
    "Next Steps": ("Next Steps", "In Progress"),
    "Critical Context": ("Critical Context", "Done"),
}
_FACT_TITLES = {
    "Goal": "Goal (what the user asked for)",
    "Constraints & Preferences": "Constraints & Preferences (the user's rules)",
    "Done": "Done (what the assistant did)",
    "Next Steps": "Next Steps (the latest request)",
    "Critical Context": "Critical Context (the assistant's last reply)",
}


def fact_groups(
    *, first_request: str, latest_request: str, rules: Sequence[str], actions: Sequence[str],
    last_reply: str, previous_goal: str = "",
) -> dict[str, list[str]]:
    """The facts picked by code by heading (:data:`FACT_HOMES`), each under its first."""
    groups = {
        "Goal": [previous_goal, first_request],
        "Constraints & Preferences": list(rules),
        "Done": list(actions),
        "Next Steps": [latest_request],
        "Critical Context": [last_reply],
    }
    seen: set[str] = set()
    out: dict[str, list[str]] = {}
    for name, lines in groups.items():
        kept = [x.strip() for x in lines if x.strip() and x.strip() not in seen]
        seen.update(kept)
        if kept:
            out[name] = kept
    return out


def facts_block(groups: dict[str, list[str]]) -> str:
    """The facts under their headings: a small model puts what it reads under "Done" in
    Done, and no longer writes a tool call as the Goal or the user's task as a decision."""
    parts = [
        f"{_FACT_TITLES[name]}:\n" + "\n".join(f"- {line}" for line in lines)
        for name, lines in groups.items()
    ]
    return ("Facts for each heading:\n\n" + "\n\n".join(parts)) if parts else ""


def build_guided(
    *, facts: str, in_context: bool, update: bool, split: bool, focus: str | None,
    problems: str | None = None, transcript: str = "", previous: str | None = None,
    repair: Sequence[str] = (),
) -> str:
    """The request of a summary under the grammar: after the chat (in context) or holding
    the transcript; with ``repair``, for those sections alone (:mod:`.repair`)."""
    if repair:
        names = ", ".join(repair)
        these = "this heading" if len(repair) == 1 else "these headings"
        head = (GUIDED_REPAIR_IN_CONTEXT if in_context else GUIDED_REPAIR_TRANSCRIPT).format(
            names=names, these=these
        )
        problems = None
    else:
        head = (GUIDED_IN_CONTEXT if in_context else GUIDED_TRANSCRIPT).format(
            update=(GUIDED_UPDATE_IN_CONTEXT if in_context else GUIDED_UPDATE_TRANSCRIPT)
            if update else "",
            split=GUIDED_SPLIT if split else "",
        )
    parts: list[str] = []
    if not in_context:
        parts.append(f"<conversation>\n{transcript}\n</conversation>")
        if update and previous:
            parts.append(f"<previous-summary>\n{previous}\n</previous-summary>")
    parts.append(head)
    if facts:
        parts.append(facts)
    parts.append(GUIDED_CLOSE + focus_line(focus).rstrip())
    text = "\n\n".join(parts)
    return text + (GUIDED_STRICT.format(problems=problems) if problems else "")
