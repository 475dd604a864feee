"""The view the model gets of tool results: cleared notes, and unanswered outputs cut to fit.
More in docs/COMPACTION.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assistant.compaction import context
from assistant.compaction.context import View
from assistant.compaction.facts import ConversationFacts, FactsCache
from assistant.compaction.tokens import Memo, TokenCounter
from assistant.compaction.visibility import cleared_note, plan_trims, trim_output
from assistant.conversation import Conversation, Message, ToolCall
from assistant.llm.base import EncodedPrompt

#: Rounds of cutting before giving up on fitting unanswered outputs.
TRIM_ROUNDS = 4
NOTE_MEMO_LIMIT = 20_000


@dataclass
class Fitted:
    """A prompt built under a view, and its exact token count."""

    view: View
    built: list[Message]
    messages: list[dict[str, Any]]
    tokens: int
    #: The prompt as the backend encoded it (its text and tokens, for ``generate``).
    prompt: EncodedPrompt | None = None
    #: Outputs cut to fit: message id -> (segment tokens before, after).
    trimmed: dict[str, tuple[int, int]] = field(default_factory=dict)


class ViewBuilder:
    """Views of one conversation; its facts (kept messages, calls, unanswered ids) come
    from ``facts``, shared with the controller, so each is computed once per state."""

    def __init__(self, counter: TokenCounter, facts: FactsCache) -> None:
        self.counter = counter
        self.facts = facts
        self._notes: Memo[tuple[str, int], str] = Memo(NOTE_MEMO_LIMIT)
        self._cuts: Memo[tuple[str, int, int], str] = Memo(NOTE_MEMO_LIMIT)
        #: The latest views by (their facts' state, the pruned ids, the caps).
        self._views: Memo[tuple[Any, ...], View] = Memo(16)

    def view(
        self, conv: Conversation, message_cap: int | None = None, latest_cap: int | None = None
    ) -> View:
        """Cleared notes for the pruned results, and cuts of messages longer than
        ``message_cap`` tokens (the user's latest: ``latest_cap``, the room beside the reply)."""
        facts = self.facts.of(conv)
        kept = facts.kept
        pruned = [m for m in kept if m.role == "tool" and m.pruned]
        # Pruning changes no fact but changes the view.
        key = (facts.state, tuple(m.id for m in pruned), message_cap, latest_cap)
        return self._views.get(key, lambda: self._view(facts, pruned, message_cap, latest_cap))

    def _view(
        self, facts: ConversationFacts, pruned: list[Message], message_cap: int | None,
        latest_cap: int | None,
    ) -> View:
        kept = facts.kept
        trims: dict[str, str] = {}
        if message_cap is not None:
            latest = facts.latest_user_id
            for m in kept:
                if m.role in ("user", "tool", "assistant") and not m.pruned:
                    keep = message_cap
                    if m.id == latest and latest_cap is not None:
                        keep = max(keep, latest_cap)
                    if self.counter.message(m) <= keep:
                        continue
                    trims[m.id] = self.oversize_cut(m, message_cap, facts.calls)
        if not pruned and not trims:
            return View()
        return View(notes={m.id: self.note(m, facts.calls) for m in pruned}, trims=trims)

    def oversize_cut(self, msg: Message, cap: int, calls: dict[str, ToolCall]) -> str:
        """``msg`` cut to ``cap`` tokens, memoized: the same cut every call keeps the KV cache
        stable until the window changes."""
        return self._cuts.get((msg.id, len(msg.content), cap), lambda: trim_output(
            msg.model_view_content(), cap, self.counter.text, calls.get(msg.tool_call_id or ""),
            kind={"user": "message", "assistant": "reply"}.get(msg.role, "output"),
        ))

    def note(self, msg: Message, calls: dict[str, ToolCall]) -> str:
        """``msg``'s cleared note (memoized; its size is counted on the original content)."""
        tokens = self.counter.unpruned(msg)
        return self._notes.get(
            (msg.id, tokens), lambda: cleared_note(msg, calls.get(msg.tool_call_id or ""), tokens))

    def cleared_size(self, conv: Conversation) -> Callable[[Message], int]:
        """Segment tokens of a result once cleared (what pruning weighs against)."""
        calls = self.facts.of(conv).calls

        def size(msg: Message) -> int:
            note = self.note(msg, calls)
            return self.counter.message(msg.model_copy(update={"content": note, "pruned": False}))

        return size

    def build(
        self, conv: Conversation, system_prompt: str, tools: Sequence[dict[str, Any]] | None,
        view: View, overhead: int | None = None,
    ) -> Fitted:
        """The prompt under ``view``, encoded; with ``overhead``, summed from its memoized
        segments instead (``prompt`` None)."""
        built = context.build_context(conv, system_prompt, kept=self.facts.of(conv).kept, view=view)
        messages = context.to_openai(built)
        if overhead is not None:
            tokens = overhead + sum(self.counter.message(m) for m in built[1:])
            return Fitted(view, built, messages, tokens)
        prompt = self.counter.encode(messages, tools)
        return Fitted(view, built, messages, prompt.count, prompt)

    def fit(
        self, conv: Conversation, system_prompt: str, tools: Sequence[dict[str, Any]] | None,
        start: Fitted, room: int,
    ) -> Fitted:
        """Cut unanswered outputs and user messages until the prompt fits ``room`` tokens or
        the cuts reach their floor."""
        facts = self.facts.of(conv)
        kept = facts.kept
        # The user's latest message is never cut to fit, unless it was already cut for
        # being longer than any prompt (a pasted log of tens of MB).
        latest = facts.latest_user_id
        users = facts.pending_users
        if latest is not None and latest not in start.view.trims:
            users = users - {latest}
        waiting = facts.unanswered | users
        calls = facts.calls
        shown_now = [context.shown(m, start.view) for m in kept]  # users maybe cut already
        outputs = [
            (m, self.counter.message(m), self.counter.text(m.model_view_content()))
            for m in shown_now
            if m.id in waiting and not m.pruned
        ]
        by_id = {m.id: m for m, _, _ in outputs}
        best = start
        excess = start.tokens - room
        for _ in range(TRIM_ROUNDS):
            plan = plan_trims(outputs, excess)
            if not plan.applies:
                break
            cuts = {
                mid: trim_output(
                    by_id[mid].model_view_content(), cap, self.counter.text,
                    calls.get(by_id[mid].tool_call_id or ""),
                    kind="message" if by_id[mid].role == "user" else "output",
                )
                for mid, cap in plan.caps.items()
            }
            trims = {**start.view.trims, **cuts}
            got = self.build(conv, system_prompt, tools, View(notes=start.view.notes, trims=trims))
            shown = {m.id: m for m in got.built}
            got.trimmed = {
                m.id: (seg, self.counter.message(shown[m.id])) for m, seg, _ in outputs
                if m.id in cuts
            }
            best = got
            if got.tokens <= room:
                break
            excess += got.tokens - room
        return best

    def as_sent(
        self, conv: Conversation, system_prompt: str, span: Sequence[Message],
        sent: tuple[frozenset[str], dict[str, str]] | None,
    ) -> list[dict[str, Any]]:
        """System prompt, summary and ``span`` with the prunes and cuts of the last prompt
        (``sent``; None: as they are now)."""
        view = self.view(conv)
        msgs = context.build_context(conv, system_prompt, kept=())
        calls = self.facts.of(conv).calls
        for m in span:
            if sent is None or m.role not in ("tool", "user", "assistant"):
                msgs.append(context.shown(m, view))
            elif m.id in sent[0]:
                note = self.note(m, calls)
                msgs.append(m.model_copy(update={"content": note, "pruned": False}))
            elif m.id in sent[1]:
                msgs.append(m.model_copy(update={"content": sent[1][m.id], "pruned": False}))
            else:
                msgs.append(m.model_copy(update={"pruned": False}) if m.pruned else m)
        return context.to_openai(msgs)
