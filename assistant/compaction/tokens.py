"""Token accounting on exactly what the model sees (docs/COMPACTION.md, `compaction/tokens.py`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

from assistant.conversation import Message
from assistant.llm.base import ChatMessages, EncodedPrompt, ModelInfo, PromptCounter, PromptEncoder
from assistant.llm.fallback_tokenizer import Cl100kTokenizer
from assistant.llm.template import ChatTemplate

_ANCHOR: dict[str, Any] = {"role": "system", "content": "."}
#: Entries kept before the memo is cleared (a long session has a few thousand messages).
MEMO_LIMIT = 50_000
#: Whole prompts remembered by :meth:`TokenCounter.encode` (as many as one ``prepare`` asks).
ENCODED_KEPT = 4

Count = Callable[[str], int]
MemoKey = tuple[str, bool, str, int, int, tuple[tuple[str, str], ...]]
SegmentKey = tuple[int, int, int]
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """Values computed once per key, cleared whole at ``limit`` entries (bounded memory)."""

    def __init__(self, limit: int = MEMO_LIMIT) -> None:
        self.limit = limit
        self._items: dict[K, V] = {}

    def get(self, key: K, make: Callable[[], V]) -> V:
        got = self._items.get(key)
        if got is None:
            if len(self._items) >= self.limit:
                self._items.clear()
            got = make()
            self._items[key] = got
        return got


def _memo_key(msg: Message) -> MemoKey:
    calls = tuple((c.id, c.name) for c in msg.tool_calls)
    # str hashes are cached by CPython, so this is O(1) after the first call per string.
    return (msg.id, msg.pruned, msg.role, hash(msg.content), len(msg.content), calls)


def _segment_key(message: dict[str, Any]) -> SegmentKey:
    """What a rendered message's segment depends on: its content (hashed; CPython caches a
    string's hash) and everything else in it (role, calls, ids: small)."""
    content = message.get("content")
    text = content if isinstance(content, str) else repr(content)
    rest = sorted((k, v if isinstance(v, str) else repr(v))
                  for k, v in message.items() if k != "content")
    return (hash(text), len(text), hash(tuple(rest)))


class TokenCounter:
    """Memoized per-message token counts through one backend's template and tokenizer."""

    def __init__(self, backend: PromptCounter) -> None:
        self.backend = backend
        self._memo: Memo[MemoKey, int] = Memo()
        self._segments: Memo[SegmentKey, int] = Memo()
        self._anchor_tokens: int | None = None
        self._text_memo: Memo[str, int] = Memo(4_096)
        #: The last whole prompts encoded, newest last: (messages, tools, what it gave).
        self._last: list[tuple[list[dict[str, Any]], list[dict[str, Any]], EncodedPrompt]] = []
        #: Whether :meth:`summed` has equalled every exact count checked against it (the
        #: controller then decides on sums); False for good at the first difference.
        self.additive = True

    def text(self, text: str) -> int:
        """Tokens of plain ``text`` (no template), memoized for repeated strings."""
        return self._text_memo.get(text, lambda: self.backend.count(text))

    def _anchor(self) -> int:
        if self._anchor_tokens is None:
            self._anchor_tokens = self.backend.count_prompt([_ANCHOR])
        return self._anchor_tokens

    def segment(self, openai_message: dict[str, Any]) -> int:
        """Tokens one message adds to a prompt (not memoized)."""
        return self.backend.count_prompt([_ANCHOR, openai_message]) - self._anchor()

    def segment_of(self, openai_message: dict[str, Any]) -> int:
        """:meth:`segment`, memoized on what the message holds."""
        return self._segments.get(
            _segment_key(openai_message), lambda: self.segment(openai_message))

    def summed(self, overhead: int, messages: ChatMessages) -> int:
        """``overhead`` plus the memoized segment of every message after the system prompt
        (exact for ChatML-style templates: :attr:`additive`)."""
        return overhead + sum(self.segment_of(m) for m in messages[1:])

    def message(self, msg: Message) -> int:
        """Tokens ``msg`` adds to the prompt as the model sees it (memoized)."""
        return self._memo.get(_memo_key(msg), lambda: self.segment_of(msg.to_openai()))

    def unpruned(self, msg: Message) -> int:
        """Tokens of ``msg`` with its full content (what pruning it would free from)."""
        return self.message(msg.model_copy(update={"pruned": False}) if msg.pruned else msg)

    def as_pruned(self, msg: Message) -> int:
        """Tokens of ``msg`` if it were pruned (the placeholder instead of the content)."""
        return self.message(msg if msg.pruned else msg.model_copy(update={"pruned": True}))

    def overhead(self, system_prompt: str, tools: Sequence[dict[str, Any]] | None) -> int:
        """System prompt + tool schemas + generation prompt."""
        return self.backend.count_prompt([{"role": "system", "content": system_prompt}], tools)

    def exact(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        """The authority: the backend's count of the rendered prompt."""
        return self.encode(messages, tools).count

    def encode(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> EncodedPrompt:
        """The whole prompt rendered and counted (with its tokens from a ``PromptEncoder``);
        the last few are remembered, so a prompt asked for again is not tokenized twice."""
        shown = list(tools or [])
        wanted = list(messages)
        for old_messages, old_tools, got in reversed(self._last):
            if old_tools == shown and old_messages == wanted:
                return got
        be = self.backend
        if isinstance(be, PromptEncoder):
            got = be.encode_prompt(messages, tools)
        else:
            got = EncodedPrompt(count=be.count_prompt(messages, tools))
        # A shallow copy of each message: callers replace what a message holds, never
        # change it in place (a deep copy cost more than the encode).
        self._last = [*self._last[-(ENCODED_KEPT - 1):],
                      ([dict(m) for m in messages], [dict(t) for t in shown], got)]
        return got


def truncate_to_tokens(
    text: str, limit: int, count: Count, marker: str = " [...truncated]"
) -> str:
    """The longest prefix of ``text`` (plus ``marker``) with at most ``limit`` tokens."""
    if limit <= 0:
        return ""
    if count(text) <= limit:
        return text
    room = limit - count(marker)
    if room <= 0:
        return ""
    return text[: largest_fitting(lambda k: text[:k], len(text), room, count)].rstrip() + marker


def shrink_to_fit(
    part: str, whole: Callable[[str], str], limit: int, count: Count
) -> tuple[str, str]:
    """``part`` cut until ``whole(part)`` (a text it is one part of) counts at most ``limit``
    tokens, or ``part`` is empty: (``part``, ``whole(part)``)."""
    text = whole(part)
    while part and count(text) > limit:
        part = truncate_to_tokens(part, max(count(part) - (count(text) - limit) - 4, 0), count)
        text = whole(part)
    return part, text


def largest_fitting(build: Callable[[int], str], most: int, limit: int, count: Count) -> int:
    """The largest ``k`` in ``[0, most]`` whose ``build(k)`` (growing with ``k``) counts at
    most ``limit`` tokens (0 when none does)."""
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(build(mid)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


class CountingBackend:
    """A :class:`PromptCounter` without a model (ChatML fallback template, offline cl100k):
    a saved chat's estimate, the replay tool's ``extractive`` mode."""

    name = "cl100k (fallback)"

    def __init__(self, window: int = 10_000, template_source: str | None = None) -> None:
        self._tok = Cl100kTokenizer()
        self._template = ChatTemplate(template_source, origin="counting")
        self._window = window

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(
            name="none", path="", trained_context=self._window, context_window=self._window,
            architecture="none", chat_template_source=self._template.origin,
            supports_native_tools=self._template.native_tools,
            tool_result_tag=self._template.result_tag,
        )

    def tokenize(self, text: str) -> list[int]:
        return self._tok.tokenize(text)

    def count(self, text: str) -> int:
        return self._tok.count(text)

    def render_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> str:
        return self._template.render(messages, tools)

    def count_prompt(
        self, messages: ChatMessages, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        return self.count(self.render_prompt(messages, tools))
