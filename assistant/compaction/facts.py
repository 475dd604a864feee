"""The facts of a conversation that several rules of context management need, computed once.
More in docs/COMPACTION.md."""

from __future__ import annotations

from functools import cached_property

from assistant.compaction.file_tracking import FileOps, extract_file_ops
from assistant.compaction.summary import MechanicalState, collect_state
from assistant.compaction.visibility import calls_by_id, pending_user_ids, unanswered_ids
from assistant.conversation import Conversation, Message, ToolCall

State = tuple[int, int, str, int, str | None]


def state_of(conv: Conversation) -> State:
    """What the facts depend on: the object, its messages and its latest compaction."""
    last = conv.messages[-1].id if conv.messages else ""
    rec = conv.last_compaction
    cut = None if rec is None else (rec.first_kept_id or rec.last_summarized_id)
    return (id(conv), len(conv.messages), last, len(conv.compactions), cut)


class ConversationFacts:
    """One state of ``conv``; every fact is computed on first use, then kept. The lists
    returned are shared: read them, never change them."""

    def __init__(self, conv: Conversation) -> None:
        self.conv = conv
        self.state = state_of(conv)
        self._files_before: dict[int | None, FileOps] = {}
        self._records: dict[tuple[int, int | None, bool], MechanicalState] = {}

    @property
    def current(self) -> bool:
        """Whether the conversation is still in the state these facts describe."""
        return state_of(self.conv) == self.state

    @cached_property
    def kept(self) -> list[Message]:
        """The messages after the latest compaction's cut (all of them when none)."""
        return self.conv.kept_messages()

    @cached_property
    def latest_user(self) -> int | None:
        """Index in :attr:`kept` of the newest user message (None: there is none)."""
        return next((i for i in range(len(self.kept) - 1, -1, -1)
                     if self.kept[i].role == "user"), None)

    @property
    def latest_user_id(self) -> str | None:
        return None if self.latest_user is None else self.kept[self.latest_user].id

    @cached_property
    def calls(self) -> dict[str, ToolCall]:
        """Every tool call of the conversation by its id (what an output answers)."""
        return calls_by_id(self.conv.messages)

    @cached_property
    def unanswered(self) -> frozenset[str]:
        """Ids of the kept tool outputs the model has not answered yet."""
        return unanswered_ids(self.kept)

    @cached_property
    def pending_users(self) -> frozenset[str]:
        """Ids of the kept user messages the model has not answered yet."""
        return pending_user_ids(self.kept)

    def files_before(self, cut: int | None = None) -> FileOps:
        """Files read and changed up to kept message ``cut`` (None: all kept), on top of
        the latest record's."""
        got = self._files_before.get(cut)
        if got is None:
            span = self.kept if cut is None else self.kept[:cut]
            rec = self.conv.last_compaction  # its record lists the files before it
            previous = FileOps(list(rec.files_read), list(rec.files_modified)) if rec else None
            got = extract_file_ops(span, previous)
            self._files_before[cut] = got
        return got

    def record_state(
        self, end: int, files_cut: int | None, last_request_visible: bool
    ) -> MechanicalState:
        """What the verbatim record would hold for ``conv.messages[:end]`` with the files of
        :meth:`files_before` ``(files_cut)``."""
        key = (end, files_cut, last_request_visible)
        got = self._records.get(key)
        if got is None:
            got = collect_state(
                self.conv.messages[:end], self.files_before(files_cut),
                last_request_visible=last_request_visible,
            )
            self._records[key] = got
        return got


class FactsCache:
    """The facts of the conversation asked about last (a new object when it changed)."""

    def __init__(self) -> None:
        self._last: ConversationFacts | None = None

    def of(self, conv: Conversation) -> ConversationFacts:
        last = self._last
        if last is None or last.conv is not conv or not last.current:
            last = ConversationFacts(conv)
            self._last = last
        return last
