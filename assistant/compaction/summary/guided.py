"""A summary request for a reply generated under the summary grammar (:mod:`.grammar`).
More in docs/COMPACTION.md."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from assistant.compaction.summary import prompts
from assistant.compaction.summary.digest import asked, gather
from assistant.compaction.summary.extractive import TRUNC
from assistant.compaction.summary.grammar import summary_grammar
from assistant.compaction.summary.repair import repair_facts
from assistant.compaction.summary.serialize import serialize, serialize_message
from assistant.compaction.summary.user_text import split_user_text
from assistant.compaction.tokens import truncate_to_tokens
from assistant.conversation import Message

#: Characters of each tool result in the guided transcript (the facts carry the calls).
TOOL_CHARS = 300
OMITTED = "[... {n} earlier messages left out ...]"


#: A sentence that asks leave to talk ("Let me think out loud about the offsite"): it binds
#: nothing, so a summary saying the offsite is "not ready" contradicts nothing.
_LEAVE = re.compile(r"^\W*let(?:'s| me| us)\b", re.IGNORECASE)


def user_rules(span: Sequence[Message], recorded: Sequence[str] = ()) -> list[str]:
    """The user's rules in ``span`` after ``recorded`` ones: what a summary must not contradict."""
    out = [r for r in recorded if r.strip() and not _LEAVE.match(r)]
    for msg in span:
        if msg.role == "user":
            pieces = split_user_text(msg.model_view_content())
            out.extend(p.text.strip() for p in pieces if p.kind == "rule")
    return list(dict.fromkeys(out))


@dataclass
class GuidedRequest:
    span: list[Message]
    grammar: str
    facts: str
    #: The facts by heading (:func:`~assistant.compaction.summary.prompts.fact_groups`).
    fact_groups: dict[str, list[str]]
    update: bool
    split: bool
    focus: str | None
    previous: str | None
    #: What validation compares the summary with.
    source: str

    @classmethod
    def build(
        cls, history: Sequence[Message], turn_prefix: Sequence[Message], *,
        previous: str | None, focus: str | None, budget: int, recorded_rules: Sequence[str] = (),
    ) -> GuidedRequest:
        span = [*history, *turn_prefix]
        digest = gather(span, previous, recorded_rules)
        # The previous Goal, without the rules a summary may have copied into it (or an
        # extractive summary's task message holds): those are the Constraints' facts.
        prev_goal = asked(" ".join(digest.previous.get("Goal", [])[:1]).replace(TRUNC, ""))
        groups = prompts.fact_groups(
            first_request=digest.first_request, latest_request=digest.latest_request,
            rules=digest.rules, actions=digest.actions, last_reply=digest.last_reply,
            previous_goal=prev_goal,
        )
        return cls(
            span=span,
            grammar=summary_grammar(budget),
            facts=prompts.facts_block(groups),
            fact_groups=groups,
            update=previous is not None,
            split=bool(turn_prefix),
            focus=focus,
            previous=previous,
            source=serialize(span, tool_chars=1 << 30),
        )

    def ask(
        self, *, in_context: bool, problems: str | None, transcript: str = "",
        repair: Sequence[str] = (),
    ) -> str:
        facts = (
            prompts.facts_block(repair_facts(self.fact_groups, repair)) if repair else self.facts
        )
        return prompts.build_guided(
            facts=facts, in_context=in_context, update=self.update, split=self.split,
            focus=self.focus, problems=problems, transcript=transcript, previous=self.previous,
            repair=repair,
        )

    def in_context(
        self, chat: Sequence[dict[str, Any]], problems: str | None, repair: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """The chat as last sent, then the request (for ``repair``: of those sections)."""
        ask = self.ask(in_context=True, problems=problems, repair=repair)
        return [*chat, {"role": "user", "content": ask}]

    def transcript(self, room: int, count: Callable[[str], int]) -> str:
        """The span as labelled text within ``room`` tokens; the oldest messages are left
        out first (the facts name the task and the actions of the whole span)."""
        pieces = [serialize_message(m, tool_chars=TOOL_CHARS) for m in self.span]
        if pieces and count(pieces[-1]) + 2 > room:
            pieces[-1] = truncate_to_tokens(pieces[-1], max(room - 2, 16), count)
        sizes = [count(p) + 2 for p in pieces]
        start = 0
        marker = count(OMITTED.format(n=len(pieces))) + 2
        while start < len(pieces) - 1 and sum(sizes[start:]) + (marker if start else 0) > room:
            start += 1
        kept = [p for p in pieces[start:] if p]
        if start:
            kept.insert(0, OMITTED.format(n=start))
        return "\n\n".join(kept)

    def transcript_messages(
        self, transcript: str, problems: str | None, repair: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        content = self.ask(
            in_context=False, problems=problems, transcript=transcript, repair=repair
        )
        return [{"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": content}]
