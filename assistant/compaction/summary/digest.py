"""What the summarizing model is shown next to its question, picked by code (docs/COMPACTION.md)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from assistant.compaction.file_tracking import call_target
from assistant.compaction.summary.clean import is_specific, parse_sections
from assistant.compaction.summary.serialize import texts
from assistant.compaction.summary.user_text import is_substantive, split_user_text
from assistant.conversation import Message, ToolCall

#: Words quoted of a user request, of a rule, of the assistant's last reply.
REQUEST_WORDS = 25
RULE_WORDS = 22
REPLY_WORDS = 25
MAX_RULES = 4
MAX_ACTIONS = 8
MAX_NAMES = 12
TARGET_CHARS = 60

_CANDIDATE = re.compile(r"[A-Za-z_][\w./:-]*\w|\d[\d,.:-]*\d")
_SENTENCE_END = re.compile(r"(?:^|[.!?:\n\"'(\[])\s*$")


def clip(text: str, words: int) -> str:
    """The first ``words`` words of ``text`` on one line ("..." when cut)."""
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


@dataclass(frozen=True)
class Digest:
    first_request: str = ""
    latest_request: str = ""
    rules: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    last_reply: str = ""
    names: tuple[str, ...] = ()
    #: The previous summary's sections (heading -> bullets), for an update.
    previous: dict[str, list[str]] = field(default_factory=dict)


def _target(call: ToolCall) -> str:
    """A tool call's path (its last three parts) or command (clipped)."""
    target = call_target(call)
    if target is None:
        return ""
    text = " ".join(target.text.split())
    if target.is_path and "/" in text:
        text = "/".join(text.rstrip("/").split("/")[-3:])
    return text if len(text) <= TARGET_CHARS else text[: TARGET_CHARS - 4].rstrip() + " ..."


def actions(span: Sequence[Message], limit: int = MAX_ACTIONS) -> list[str]:
    """What the assistant did, as sentences: the tools it used on which targets (newest
    ``limit`` targets per tool), and each failed call with the start of its error."""
    results = {m.tool_call_id: m for m in span if m.role == "tool"}
    used: dict[str, list[str]] = {}
    failed: list[str] = []
    for msg in span:
        for call in msg.tool_calls:
            target = _target(call)
            targets = used.setdefault(call.name, [])
            if target and target not in targets:
                targets.append(target)
            res = results.get(call.id)
            if res is not None and res.is_error:
                failed.append(f"{call.name} {target} failed: {clip(res.content, 10)}".strip())
    out = []
    for name, targets in used.items():
        shown = targets[-3:]
        more = f" and {len(targets) - 3} more" if len(targets) > 3 else ""
        out.append(f"The assistant used {name}" + (f" on {', '.join(shown)}{more}." if shown
                                                   else "."))
    return (out + failed[-2:])[-limit:]


def names(span: Sequence[Message], limit: int = MAX_NAMES) -> list[str]:
    """Paths, identifiers, proper names and long numbers the user and assistant wrote,
    most frequent first."""
    counts: Counter[str] = Counter()
    for msg in span:
        if msg.role not in ("user", "assistant"):
            continue
        text = msg.model_view_content()  # at most MAX_SHOWN_CHARS of a huge message
        for m in _CANDIDATE.finditer(text):
            word = m.group(0).rstrip(".:,-")
            initial = _SENTENCE_END.search(text[max(0, m.start() - 3) : m.start()]) is not None
            if is_specific(word, initial):  # no "@": _CANDIDATE has none
                counts[word] += 1
        for call in msg.tool_calls:
            target = _target(call)
            if target and " " not in target:
                counts[target] += 1
    return [w for w, _ in counts.most_common(limit)]


def asked(text: str) -> str:
    """What a user message asks, without the rules it also states (the Constraints' facts)."""
    return " ".join(p.text.strip() for p in split_user_text(text) if p.kind != "rule").strip()


def _ask(text: str) -> str:
    return asked(text) or text


def gather(
    span: Sequence[Message], previous: str | None = None, recorded_rules: Sequence[str] = ()
) -> Digest:
    """The digest of the messages a summary covers; ``recorded_rules`` are the user's rules
    recorded before it (older rules are still the user's: they come first)."""
    users = [text for text in texts(span, "user") if is_substantive(text)]
    rules: list[str] = []
    for text in [*recorded_rules, *users]:
        for piece in split_user_text(text):
            if piece.kind == "rule" and piece.text.strip() not in rules:
                rules.append(piece.text.strip())
    replies = texts(span, "assistant")
    return Digest(
        first_request=clip(_ask(users[0]), REQUEST_WORDS) if users else "",
        latest_request=clip(_ask(users[-1]), REQUEST_WORDS) if len(users) > 1 else "",
        rules=tuple(clip(r, RULE_WORDS) for r in rules[:MAX_RULES]),
        actions=tuple(actions(span)),
        last_reply=clip(replies[-1], REPLY_WORDS) if replies else "",
        names=tuple(names(span)),
        previous=parse_sections(previous) if previous else {},
    )
