"""Mechanical state (appended by code to every summary) and the extractive fallback summary.
More in docs/COMPACTION.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from assistant.compaction.file_tracking import FileOps
from assistant.compaction.summary.prompts import (
    MECHANICAL_MARKER,
    SUMMARY_HEADER,
    SUMMARY_HEADER_SHORT,
)
from assistant.compaction.summary.serialize import format_call, texts
from assistant.compaction.summary.user_record import render_user_record
from assistant.compaction.summary.user_text import instructions, task_statement
from assistant.compaction.tokens import truncate_to_tokens
from assistant.conversation import Message

Count = Callable[[str], int]

TRUNC = " [...truncated]"
#: Largest share of the record the file lists may take (paths are short; most fit).
FILES_SHARE = 0.35


@dataclass
class MechanicalState:
    files: FileOps = field(default_factory=FileOps)
    #: The user's instruction sentences in the summarized part, oldest first.
    constraints: list[str] = field(default_factory=list)
    #: The user's messages in the summarized part, oldest first (without ``last_request``).
    user_messages: list[str] = field(default_factory=list)
    #: The newest user message, when it is not visible verbatim after the summary.
    last_request: str | None = None
    #: The task statement: the first substantive user message.
    first_request: str | None = None


def collect_state(
    summarized: Sequence[Message], files: FileOps, *, last_request_visible: bool
) -> MechanicalState:
    """State from every message covered by the summary (all of them, not only new ones)."""
    users = texts(summarized, "user")
    constraints: list[str] = []
    for text in users:
        for sentence in instructions(text):  # verbatim, pasted material excluded
            if sentence not in constraints:
                constraints.append(sentence)
    last = None if last_request_visible or not users else users[-1]
    older = users[:-1] if last is not None else users
    return MechanicalState(files=files, constraints=constraints, user_messages=older,
                           last_request=last, first_request=task_statement(users))


def _bullets(items: Sequence[str], budget: int, count: Count, *, newest_first: bool) -> str:
    """Bullets within ``budget`` tokens; what does not fit is truncated, then omitted."""
    lines = ["- " + item.replace("\n", " ") for item in items]
    if not lines:
        return ""
    if sum(count(line) + 1 for line in lines) <= budget:
        return "\n".join(lines)
    order = list(reversed(lines)) if newest_first else list(lines)
    room = budget - 12  # room left for the omission marker
    chosen: list[str] = []
    used = 0
    for line in order:
        size = count(line) + 1
        if used + size <= room:
            chosen.append(line)
            used += size
            continue
        if room - used >= 16:
            cut = truncate_to_tokens(line, room - used - 1, count, TRUNC)
            if cut:
                chosen.append(cut)
        break
    omitted = len(lines) - len(chosen)
    if newest_first:
        chosen.reverse()
        if omitted:
            chosen.insert(0, f"- [{omitted} older omitted]")
    elif omitted:
        chosen.append(f"- [{omitted} more omitted]")
    return "\n".join(chosen)


def _path_list(label: str, paths: Sequence[str], budget: int, count: Count) -> str:
    """``label: ...`` within ``budget`` tokens; when cut, the oldest and newest are kept."""
    line = f"{label}: " + ", ".join(paths)
    if count(line) <= budget:
        return line
    keep = len(paths)
    while keep > 1:
        keep -= 1
        head, tail = paths[: (keep + 1) // 2], paths[len(paths) - keep // 2 :]
        omitted = f"[... {len(paths) - keep} omitted ...]"
        line = f"{label}: {', '.join(head)} {omitted} {', '.join(tail)}"
        if count(line) <= budget:
            return line
    # The oldest path alone: the newest are usually still in the kept messages.
    line = f"{label}: {paths[0]} [+{len(paths) - 1} more]"
    if len(paths) > 1 and count(line) <= budget:
        return line
    return f"{label}: [{len(paths)} files]"


def files_section(files: FileOps, budget: int, count: Count) -> str:
    """``## Files`` with the modified and read paths within ``budget`` tokens ("" if none)."""
    if not (files.read or files.modified) or budget <= 8:
        return ""
    lines = ["## Files"]
    if files.modified:
        share = budget // 2 if files.read else budget
        lines.append(_path_list("Modified", files.modified, share - count(lines[0]), count))
    if files.read:
        lines.append(_path_list("Read", files.read, budget - count("\n".join(lines)), count))
    return "\n".join(lines)


def render_mechanical(state: MechanicalState, budget: int, count: Count) -> str:
    """The verbatim record appended to a summary, about ``budget`` tokens: the file lists
    up to :data:`FILES_SHARE` of it, the user's words (:mod:`.user_record`) the rest."""
    if budget <= 0:
        return ""
    files = files_section(state.files, int(budget * FILES_SHARE), count)
    left = budget - (count(files) + 2 if files else 0)
    users = render_user_record(
        state.user_messages, left, count, last_request=state.last_request
    )
    return "\n\n".join(part for part in (users, files) if part)


def compose_summary(model_part: str, mechanical: str, *, short: bool = False) -> str:
    """The injected text: header, the summary proper, then the verbatim record."""
    text = f"{SUMMARY_HEADER_SHORT if short else SUMMARY_HEADER}\n\n{model_part.strip()}"
    if mechanical:
        text += MECHANICAL_MARKER + mechanical
    return text


def model_part(summary: str) -> str:
    """The summary proper of a stored summary (header and verbatim record removed)."""
    body = summary.split(MECHANICAL_MARKER, 1)[0]
    for header in (SUMMARY_HEADER, SUMMARY_HEADER_SHORT):
        if body.startswith(header):
            body = body[len(header) :]
            break
    return body.strip()


def extractive_summary(
    summarized: Sequence[Message], state: MechanicalState, *, previous: str | None,
    budget: int, count: Count,
) -> str:
    """A deterministic summary with every required section (no model involved)."""
    goal = state.first_request or "(no user request in the summarized part)"
    done: list[str] = []
    blocked: list[str] = []
    results = {m.tool_call_id: m for m in summarized if m.role == "tool"}
    for msg in summarized:
        for call in msg.tool_calls:
            res = results.get(call.id)
            status = "no result" if res is None else ("error" if res.is_error else "ok")
            done.append(f"{format_call(call)} -> {status}")
            if res is not None and res.is_error:
                blocked.append(f"{call.name}: {res.content.strip()[:200]}")
    replies = texts(summarized, "assistant")
    current = state.last_request or (state.user_messages[-1] if state.user_messages else "")
    share = max(budget // 8, 12)
    parts = [
        "## Goal\n" + truncate_to_tokens(goal.replace("\n", " "), share, count, TRUNC),
        "## Constraints & Preferences\n"
        + ("- in the user's own words, recorded verbatim below" if state.constraints
           else "- none stated"),
        "## Progress\n### Done\n"
        + (_bullets(done, share * 2, count, newest_first=True) or "- nothing recorded")
        + "\n### In Progress\n- "
        + (truncate_to_tokens(current.replace("\n", " "), share, count, TRUNC) or "none")
        + "\n### Blocked\n"
        + (_bullets(blocked, share, count, newest_first=True) or "- none"),
        "## Key Decisions\n- not recorded (extractive summary)",
        "## Next Steps\n1. Continue with the latest user request.",
    ]
    critical: list[str] = []
    if replies:
        critical.append("Last assistant reply: " + replies[-1].replace("\n", " "))
    if previous:
        critical.append("Earlier summary: " + model_part(previous).replace("\n", " "))
    used = sum(count(p) + 2 for p in parts) + 8
    body = _bullets(critical, max(budget - used, 0), count, newest_first=False)
    parts.append("## Critical Context\n" + (body or "- none"))
    return "\n\n".join(parts)
